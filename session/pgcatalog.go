package session

// The rows of the system catalog's tables (sql/systables.go), generated
// from the engine's catalog when a query that reads one is planned: the
// planner reads them as a snapshot, as it reads a view's rows. What
// PostgreSQL keeps that Hummer has no notion of (comments, policies,
// publications, inheritance, statistics objects, role membership) is
// there as empty tables, so that the queries clients send about it run and
// find nothing, as they would on a fresh PostgreSQL database.

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// databaseName is the one database an engine has, as pg_database and
// information_schema name it.
const databaseName = "hummer"

// databaseOID is its oid (PostgreSQL's postgres database has 5).
const databaseOID = 5

// databaseOwnerOID is the role pg_database_owner, PostgreSQL 15's owner of
// the public schema: whoever owns the database.
const databaseOwnerOID = 6171

// row is one system table row: values by column name; a column left out
// holds PostgreSQL's "none" for its type: 0, false or NULL (text), or NULL
// in information_schema.
type row map[string]any

// systemSnapshot returns the rows of system table name as an Arrow IPC
// stream (planner.Options.Snapshot).
func (s *Session) systemSnapshot(name string) ([]byte, error) {
	schema, table, _ := strings.Cut(name, ".")
	t, ok := sql.SystemTable(schema, table)
	if !ok {
		return nil, fmt.Errorf("no system table %s", name)
	}
	values := make([][]types.Value, 0)
	for _, r := range s.systemRows(name) {
		values = append(values, rowValues(t, r, schema == sql.InformationSchema))
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(t.Columns.Arrow()))
	if len(values) > 0 {
		rec, err := operators.ValuesRecord(memory.DefaultAllocator, t.Columns, values)
		if err != nil {
			return nil, fmt.Errorf("system table %s: %w", name, err)
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// rowValues orders r's values as t's columns; with nulls, a column left out
// is NULL whatever its type (information_schema's way).
func rowValues(t *sql.Table, r row, nulls bool) []types.Value {
	out := make([]types.Value, len(t.Columns))
	for i, c := range t.Columns {
		v, ok := r[c.Name]
		switch {
		case !ok && !nulls && (c.Type.ID == types.Int64 || c.Type.ID == types.Float64 || c.Type.ID == types.Bool):
			out[i] = types.Value{Type: c.Type} // 0 or false
		case !ok || v == nil:
			out[i] = types.NullValue(c.Type)
		default:
			out[i] = goValue(c.Type, v)
		}
	}
	return out
}

func goValue(t types.Type, v any) types.Value {
	switch x := v.(type) {
	case int:
		return types.IntValue(int64(x))
	case int64:
		return types.IntValue(x)
	case bool:
		return types.BoolValue(x)
	case float64:
		return types.FloatValue(x)
	case string:
		return types.Value{Type: t, Str: x} // text, name or "char"
	}
	panic(fmt.Sprintf("session: system catalog value %T for a %s column", v, t))
}

// catalogTable is a table or view of the catalog as the system tables list
// it: the engine's own and the system tables themselves.
type catalogTable struct {
	oid        int64
	schema     string
	nsp        int64
	name       string
	kind       string // pg_class.relkind: r, v or i
	columns    types.Schema
	pgTypes    []string // a system table's PostgreSQL column types
	notNull    map[string]bool
	defaults   map[string]types.Value
	key        []string
	query      string
	insertable bool
}

// catalogTables lists every table and view, the system catalog's first.
func (s *Session) catalogTables() []catalogTable {
	var out []catalogTable
	for _, name := range sql.SystemTableNames() {
		schema, table, _ := strings.Cut(name, ".")
		if sql.SystemFunctionTables[table] {
			continue
		}
		t, _ := sql.SystemTable(schema, table)
		ct := catalogTable{oid: sql.SystemOID(name), schema: schema, name: table, columns: t.Columns, kind: "r"}
		ct.nsp = sql.PgCatalogOID
		if schema == sql.InformationSchema {
			ct.nsp, ct.kind = sql.InformationSchemaOID, "v"
		}
		for i := range t.Columns {
			ct.pgTypes = append(ct.pgTypes, sql.SystemColumnType(t, i))
		}
		out = append(out, ct)
	}
	for _, t := range s.e.catalog.Tables() {
		ct := catalogTable{oid: t.OID, schema: "public", nsp: sql.PublicOID, name: t.Name, kind: "r",
			columns: t.Columns, defaults: t.Defaults, key: t.PrimaryKey, notNull: map[string]bool{},
			insertable: t.IsStored()}
		if t.IsView() {
			ct.kind, ct.query = "v", t.Query
		}
		for _, c := range t.NotNull {
			ct.notNull[c] = true
		}
		for _, c := range t.PrimaryKey {
			ct.notNull[c] = true
		}
		out = append(out, ct)
	}
	return out
}

// systemRows returns the rows of system table name.
func (s *Session) systemRows(name string) []row {
	if rows, ok := s.pgjdbcRows(name); ok { // pgjdbc.go
		return rows
	}
	switch name {
	case "pg_catalog.pg_namespace":
		return []row{
			{"oid": sql.PgCatalogOID, "nspname": sql.PgCatalog, "nspowner": sql.SuperuserOID},
			{"oid": sql.PublicOID, "nspname": "public", "nspowner": databaseOwnerOID},
			{"oid": sql.InformationSchemaOID, "nspname": sql.InformationSchema, "nspowner": sql.SuperuserOID},
		}
	case "pg_catalog.pg_class":
		return s.pgClass()
	case "pg_catalog.pg_attribute":
		return s.pgAttribute()
	case "pg_catalog.pg_attrdef":
		var rows []row
		for _, t := range s.catalogTables() {
			for i, c := range t.columns {
				if d, ok := t.defaults[c.Name]; ok {
					rows = append(rows, row{"oid": t.oid*1000 + int64(i) + 1, "adrelid": t.oid, "adnum": i + 1, "adbin": sqlLiteral(d)})
				}
			}
		}
		return rows
	case "pg_catalog.pg_language":
		// PostgreSQL 15's own (psql's \df+ joins it); Hummer has no
		// functions of its users to write in them.
		return []row{
			{"oid": 12, "lanname": "internal", "lanowner": sql.SuperuserOID, "lanvalidator": 2246},
			{"oid": 13, "lanname": "c", "lanowner": sql.SuperuserOID, "lanvalidator": 2247},
			{"oid": 14, "lanname": "sql", "lanowner": sql.SuperuserOID, "lanpltrusted": true, "lanvalidator": 2248},
		}
	case "pg_catalog.pg_am":
		return []row{{"oid": 2, "amname": "heap", "amhandler": "heap_tableam_handler", "amtype": "t"},
			{"oid": 403, "amname": "btree", "amhandler": "bthandler", "amtype": "i"}}
	case "pg_catalog.pg_collation":
		return []row{
			{"oid": 100, "collname": "default", "collnamespace": sql.PgCatalogOID, "collowner": sql.SuperuserOID, "collprovider": "d", "collisdeterministic": true, "collencoding": -1},
			{"oid": 950, "collname": "C", "collnamespace": sql.PgCatalogOID, "collowner": sql.SuperuserOID, "collprovider": "c", "collisdeterministic": true, "collencoding": -1, "collcollate": "C", "collctype": "C"},
			{"oid": 951, "collname": "POSIX", "collnamespace": sql.PgCatalogOID, "collowner": sql.SuperuserOID, "collprovider": "c", "collisdeterministic": true, "collencoding": -1, "collcollate": "POSIX", "collctype": "POSIX"},
		}
	case "pg_catalog.pg_database":
		return []row{{"oid": databaseOID, "datname": databaseName, "datdba": sql.SuperuserOID, "encoding": 6,
			"datlocprovider": "c", "datallowconn": true, "datconnlimit": -1, "dattablespace": 1663,
			"datcollate": "C", "datctype": "C"}}
	case "pg_catalog.pg_tablespace":
		return []row{{"oid": 1663, "spcname": "pg_default", "spcowner": sql.SuperuserOID},
			{"oid": 1664, "spcname": "pg_global", "spcowner": sql.SuperuserOID}}
	case "pg_catalog.pg_roles":
		rows := []row{{"rolname": "pg_database_owner", "rolinherit": true, "rolconnlimit": -1,
			"rolpassword": "********", "oid": databaseOwnerOID}}
		for _, u := range s.e.catalog.Users() {
			rows = append(rows, row{"rolname": u.Name, "rolsuper": u.Superuser, "rolinherit": true,
				"rolcreaterole": u.Superuser, "rolcreatedb": u.Superuser, "rolcanlogin": true,
				"rolreplication": u.Superuser, "rolconnlimit": -1, "rolpassword": "********",
				"rolbypassrls": u.Superuser, "oid": u.OID})
		}
		return rows
	case "pg_catalog.pg_user":
		var rows []row
		for _, u := range s.e.catalog.Users() {
			rows = append(rows, row{"usename": u.Name, "usesysid": u.OID, "usecreatedb": u.Superuser,
				"usesuper": u.Superuser, "userepl": u.Superuser, "usebypassrls": u.Superuser, "passwd": "********"})
		}
		return rows
	case "pg_catalog.pg_index":
		var rows []row
		for _, t := range s.catalogTables() {
			if len(t.key) == 0 {
				continue
			}
			key := t.keyPositions()
			rows = append(rows, row{"indexrelid": sql.PrimaryKeyIndexOID(t.oid), "indrelid": t.oid,
				"indnatts": len(key), "indnkeyatts": len(key), "indisunique": true, "indisprimary": true,
				"indimmediate": true, "indisvalid": true, "indisready": true, "indislive": true,
				"indkey": joinInts(key, " "), "indcollation": joinInts(make([]int, len(key)), " "),
				"indclass": joinInts(make([]int, len(key)), " "), "indoption": joinInts(make([]int, len(key)), " ")})
		}
		return rows
	case "pg_catalog.pg_constraint":
		var rows []row
		for _, t := range s.catalogTables() {
			if len(t.key) == 0 {
				continue
			}
			rows = append(rows, row{"oid": sql.PrimaryKeyConstraintOID(t.oid), "conname": t.name + "_pkey",
				"connamespace": t.nsp, "contype": "p", "convalidated": true, "conrelid": t.oid,
				"conindid": sql.PrimaryKeyIndexOID(t.oid), "confupdtype": " ", "confdeltype": " ",
				"confmatchtype": " ", "conislocal": true, "connoinherit": true,
				"conkey": "{" + joinInts(t.keyPositions(), ",") + "}"})
		}
		return rows
	case "pg_catalog.pg_settings":
		return s.pgSettings()
	case "pg_catalog.pg_tables":
		var rows []row
		for _, t := range s.catalogTables() {
			if t.kind == "r" {
				rows = append(rows, row{"schemaname": t.schema, "tablename": t.name, "tableowner": sql.SuperuserName,
					"hasindexes": len(t.key) > 0})
			}
		}
		return rows
	case "pg_catalog.pg_views":
		var rows []row
		for _, t := range s.catalogTables() {
			if t.kind == "v" {
				rows = append(rows, row{"schemaname": t.schema, "viewname": t.name, "viewowner": sql.SuperuserName, "definition": viewDefinition(t.query)})
			}
		}
		return rows
	case "pg_catalog.pg_stat_activity":
		return []row{{"datid": databaseOID, "datname": databaseName, "usename": s.user,
			"application_name": s.vars["application_name"], "state": "active", "backend_type": "client backend"}}
	case "information_schema.schemata":
		var rows []row
		for _, n := range []string{sql.InformationSchema, sql.PgCatalog, "public"} {
			rows = append(rows, row{"catalog_name": databaseName, "schema_name": n, "schema_owner": sql.SuperuserName})
		}
		return rows
	case "information_schema.tables":
		var rows []row
		for _, t := range s.catalogTables() {
			kind, insertable := "BASE TABLE", yesNo(t.insertable)
			if t.kind == "v" {
				kind = "VIEW"
			}
			rows = append(rows, row{"table_catalog": databaseName, "table_schema": t.schema, "table_name": t.name,
				"table_type": kind, "is_insertable_into": insertable, "is_typed": "NO"})
		}
		return rows
	case "information_schema.columns":
		return s.infoColumns()
	case "information_schema.views":
		var rows []row
		for _, t := range s.catalogTables() {
			if t.kind == "v" {
				rows = append(rows, row{"table_catalog": databaseName, "table_schema": t.schema, "table_name": t.name,
					"view_definition": viewDefinition(t.query), "check_option": "NONE", "is_updatable": "NO",
					"is_insertable_into": "NO", "is_trigger_updatable": "NO", "is_trigger_deletable": "NO",
					"is_trigger_insertable_into": "NO"})
			}
		}
		return rows
	case "information_schema.table_constraints":
		var rows []row
		for _, t := range s.catalogTables() {
			if len(t.key) > 0 {
				rows = append(rows, row{"constraint_catalog": databaseName, "constraint_schema": t.schema,
					"constraint_name": t.name + "_pkey", "table_catalog": databaseName, "table_schema": t.schema,
					"table_name": t.name, "constraint_type": "PRIMARY KEY", "is_deferrable": "NO",
					"initially_deferred": "NO", "enforced": "YES"})
			}
		}
		return rows
	case "information_schema.key_column_usage":
		var rows []row
		for _, t := range s.catalogTables() {
			for i, c := range t.key {
				rows = append(rows, row{"constraint_catalog": databaseName, "constraint_schema": t.schema,
					"constraint_name": t.name + "_pkey", "table_catalog": databaseName, "table_schema": t.schema,
					"table_name": t.name, "column_name": c, "ordinal_position": i + 1})
			}
		}
		return rows
	}
	return nil // a table of what Hummer has none of
}

func (s *Session) pgClass() []row {
	var rows []row
	for _, t := range s.catalogTables() {
		r := row{"oid": t.oid, "relname": t.name, "relnamespace": t.nsp, "relowner": sql.SuperuserOID,
			"relpersistence": "p", "relkind": t.kind, "relnatts": len(t.columns), "relhasindex": len(t.key) > 0,
			"relispopulated": true, "relreplident": "d", "reltuples": -1.0}
		if t.nsp == sql.PublicOID {
			r["reltype"] = rowTypeOID(t.oid) // pgjdbc.go
		}
		if t.kind == "r" {
			r["relam"], r["relfilenode"] = 2, t.oid
		} else {
			r["relreplident"] = "n"
		}
		rows = append(rows, r)
		if len(t.key) > 0 {
			idx := sql.PrimaryKeyIndexOID(t.oid)
			rows = append(rows, row{"oid": idx, "relname": t.name + "_pkey", "relnamespace": t.nsp,
				"relowner": sql.SuperuserOID, "relam": 403, "relfilenode": idx, "relpersistence": "p", "relkind": "i",
				"relnatts": len(t.key), "relispopulated": true, "relreplident": "n",
				"reltuples": 0.0, "relpages": 1}) // an index built on an empty table: its metapage (pgjdbc's getIndexInfo)
		}
	}
	return rows
}

func (s *Session) pgAttribute() []row {
	var rows []row
	for _, t := range s.catalogTables() {
		for i, c := range t.columns {
			typ, mod := sql.PgTypeOID(c.Type), sql.PgTypmod(c.Type)
			if t.pgTypes != nil {
				typ, mod = sql.PgSystemTypeOID(t.pgTypes[i]), -1
			}
			_, hasDef := t.defaults[c.Name]
			coll := 0 // the type's own collation (pg_type.typcollation): \d shows none
			if typ == 25 || typ == 1043 || typ == 19 {
				coll = 100
			}
			rows = append(rows, row{"attrelid": t.oid, "attname": c.Name, "atttypid": typ, "attstattarget": -1,
				"attlen": typeLen(typ), "attnum": i + 1, "attcacheoff": -1, "atttypmod": mod, "attbyval": typeLen(typ) > 0,
				"attalign": "d", "attstorage": storage(typ), "attcompression": "", "attnotnull": t.notNull[c.Name],
				"atthasdef": hasDef, "attidentity": "", "attgenerated": "", "attislocal": true, "attcollation": coll})
		}
		if len(t.key) > 0 {
			for i, k := range t.key {
				c := t.columns[t.columns.Index(k)]
				rows = append(rows, row{"attrelid": sql.PrimaryKeyIndexOID(t.oid), "attname": k,
					"atttypid": sql.PgTypeOID(c.Type), "attstattarget": -1, "attlen": typeLen(sql.PgTypeOID(c.Type)),
					"attnum": i + 1, "atttypmod": sql.PgTypmod(c.Type), "attstorage": storage(sql.PgTypeOID(c.Type)),
					"attcompression": "", "attidentity": "", "attgenerated": "", "attislocal": true})
			}
		}
	}
	return rows
}

// typeLen is pg_type.typlen of the types Hummer's columns have.
func typeLen(oid int64) int {
	switch oid {
	case 16, 18:
		return 1
	case 21:
		return 2
	case 23, 26, 28, 24, 700, 1082:
		return 4
	case 20, 701, 1114, 1184:
		return 8
	case 19:
		return 64
	}
	return -1
}

func storage(oid int64) string {
	if typeLen(oid) > 0 {
		return "p"
	}
	if oid == 1700 {
		return "m" // numeric's typstorage
	}
	return "x"
}

func pgTypeRows() []row {
	all := sql.PgTypes()
	oids := make([]int64, 0, len(all))
	for oid := range all {
		oids = append(oids, oid)
	}
	sort.Slice(oids, func(i, j int) bool { return oids[i] < oids[j] })
	arrayOf := map[int64]int64{}
	for oid, name := range all {
		if strings.HasPrefix(name, "_") {
			for e, n := range all {
				if n == name[1:] {
					arrayOf[e] = oid
				}
			}
		}
	}
	var rows []row
	for _, oid := range oids {
		name := all[oid]
		r := row{"oid": oid, "typname": name, "typnamespace": sql.PgCatalogOID, "typowner": sql.SuperuserOID,
			"typlen": typeLen(oid), "typbyval": typeLen(oid) > 0 && typeLen(oid) <= 8, "typtype": "b",
			"typcategory": typeCategory(oid), "typisdefined": true, "typdelim": ",", "typarray": arrayOf[oid],
			"typinput": name + "in", "typoutput": name + "out", "typalign": "i", "typstorage": storage(oid),
			"typtypmod": -1}
		if strings.HasPrefix(name, "_") {
			r["typcategory"], r["typinput"], r["typoutput"], r["typlen"], r["typbyval"] = "A", "array_in", "array_out", -1, false
			for e, n := range all {
				if n == name[1:] {
					r["typelem"] = e
				}
			}
		}
		if oid == 25 || oid == 1043 || oid == 19 {
			r["typcollation"] = 100
		}
		rows = append(rows, r)
	}
	return rows
}

func typeCategory(oid int64) string {
	switch oid {
	case 16:
		return "B"
	case 20, 21, 23, 26, 24, 700, 701, 1700, 2205, 2206, 4089:
		return "N"
	case 19, 25, 1043:
		return "S"
	case 1082, 1114, 1184:
		return "D"
	case 22, 30:
		return "A"
	}
	return "U"
}

func (s *Session) infoColumns() []row {
	var rows []row
	for _, t := range s.catalogTables() {
		for i, c := range t.columns {
			r := row{"table_catalog": databaseName, "table_schema": t.schema, "table_name": t.name,
				"column_name": c.Name, "ordinal_position": i + 1, "is_nullable": yesNo(!t.notNull[c.Name]),
				"udt_catalog": databaseName, "udt_schema": sql.PgCatalog, "is_identity": "NO",
				"is_generated": "NEVER", "is_updatable": yesNo(t.insertable)}
			typ, mod := sql.PgTypeOID(c.Type), sql.PgTypmod(c.Type)
			if t.pgTypes != nil {
				typ, mod = sql.PgSystemTypeOID(t.pgTypes[i]), -1
			}
			r["data_type"], r["udt_name"] = infoDataType(typ, mod), sql.PgTypes()[typ]
			if d, ok := t.defaults[c.Name]; ok {
				r["column_default"] = sqlLiteral(d)
			}
			switch typ {
			case 20, 21, 23:
				r["numeric_precision"], r["numeric_precision_radix"], r["numeric_scale"] = map[int64]int{20: 64, 21: 16, 23: 32}[typ], 2, 0
			case 700, 701:
				r["numeric_precision"], r["numeric_precision_radix"] = map[int64]int{700: 24, 701: 53}[typ], 2
			case 1700:
				r["numeric_precision_radix"] = 10
				if c.Type.ID == types.Decimal {
					r["numeric_precision"], r["numeric_scale"] = int(c.Type.Precision), int(c.Type.Scale)
				}
			case 1114, 1184:
				r["datetime_precision"] = 6
			case 1082:
				r["datetime_precision"] = 0
			case 25, 1042, 1043:
				// A length's characters at most 4 bytes each in UTF-8.
				r["character_octet_length"] = 1073741824
				if mod >= 4 {
					r["character_maximum_length"], r["character_octet_length"] = mod-4, 4*(mod-4)
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// infoDataType is information_schema's data_type: the SQL name, ARRAY for
// an array, USER-DEFINED for what has none.
func infoDataType(oid, typmod int64) string {
	if strings.HasPrefix(sql.PgTypes()[oid], "_") {
		return "ARRAY"
	}
	switch oid {
	case 1700:
		return "numeric"
	case 18:
		return `"char"`
	case 1042:
		return "character"
	case 22, 30, 194, 1033, 24, 2205, 2206, 4089, 28:
		return "USER-DEFINED"
	}
	name := expr.FormatType(oid, -1)
	return name
}

// pgSettings lists the parameters as SHOW ALL does, with pg_settings'
// columns.
// SettingNames names every parameter pg_settings lists (sql.SettingLister).
func (s *Session) SettingNames() []string {
	names := make([]string, 0, len(s.vars)+2)
	for k := range s.vars {
		names = append(names, k)
	}
	return append(names, "transaction_isolation", "transaction_read_only")
}

func (s *Session) pgSettings() []row {
	keys := make([]string, 0, len(s.vars)+2)
	for k := range s.vars {
		keys = append(keys, k)
	}
	keys = append(keys, "transaction_isolation", "transaction_read_only")
	sort.Strings(keys)
	var rows []row
	for i, k := range keys {
		if i > 0 && keys[i-1] == k {
			continue
		}
		v, _ := s.Setting(k)
		r := row{"name": paramName(k), "setting": v, "category": "Hummer", "context": "user",
			"vartype": "string", "source": "session", "pending_restart": false}
		if p, ok := params[k]; ok {
			r["short_desc"], r["boot_val"], r["reset_val"] = p.desc, p.def, p.def
			if v == p.def {
				r["source"] = "default"
			}
			if p.fixed {
				r["context"] = "internal"
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// sqlLiteral writes a DEFAULT value as pg_get_expr shows it: numbers as
// they are, other values quoted and cast to their type.
func sqlLiteral(v types.Value) string {
	if v.Null {
		return "NULL"
	}
	text := expr.FormatValue(v)
	switch v.Type.ID {
	case types.Int64, types.Float64, types.Decimal:
		return text
	case types.Bool:
		return strings.ToLower(text) // true, as pg_get_expr shows it
	case types.String:
		text = v.Str // FormatValue's is quoted already
	case types.Timestamp:
		text = string(types.AppendTimestamp(nil, v.Int))
	case types.Date:
		text = string(types.AppendDate(nil, v.Int))
	}
	switch v.Type.ID { // FormatValue's SQL literal, without its quotes and keyword
	case types.String:
		text = v.Str
	case types.Date:
		text = string(types.AppendDate(nil, v.Int))
	case types.Timestamp:
		text = string(types.AppendTimestamp(nil, v.Int))
	}
	return "'" + strings.ReplaceAll(text, "'", "''") + "'::" + expr.FormatType(sql.PgTypeOID(v.Type), -1)
}

// viewDefinition is pg_views.definition: the query, as pg_get_viewdef
// shows it, on a line of its own after a blank.
func viewDefinition(query string) string {
	if query == "" {
		return ""
	}
	return " " + query + ";"
}

func (t catalogTable) keyPositions() []int {
	key := make([]int, len(t.key))
	for i, k := range t.key {
		key[i] = t.columns.Index(k) + 1
	}
	return key
}

func joinInts(xs []int, sep string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, sep)
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}
