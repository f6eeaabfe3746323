package sql

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hummer-db/hummer/exec/types"
)

// The system catalog: PostgreSQL's pg_catalog and information_schema, as
// tables the binder resolves like any other, so that the queries psql and
// the drivers send about tables, columns and types run as they send them.
// Their rows are generated from Hummer's catalog when a query is planned
// (the session's SystemRows; the planner reads them as a snapshot, like a
// view's rows), so a query sees one consistent state of the catalog.
//
// Their columns have PostgreSQL's names and Hummer's nearest types: oid,
// int2 and int4 are bigint, name and "char" are text, and the array types
// (text[], oid[], int2vector, aclitem[]) are text holding PostgreSQL's text
// form of the array ('{a,b}'), which the array functions of bind_pgfunc.go
// read; Hummer has no array type. Columns Hummer has no notion of hold
// PostgreSQL's value for "none" (0, false, NULL).

// SystemEngine is the Engine of a system catalog table.
const SystemEngine = "system"

// IsSystem reports whether t is a table of the system catalog.
func (t *Table) IsSystem() bool { return t.Engine == SystemEngine }

// systemSchemas are the schemas of the system catalog. pg_catalog is searched
// first for unqualified names, as in PostgreSQL; information_schema only
// when named.
const (
	PgCatalog         = "pg_catalog"
	InformationSchema = "information_schema"
)

// systemColumns lists each system table's columns as "name pgtype".
var systemColumns = map[string]string{
	"pg_catalog.pg_namespace": "oid oid, nspname name, nspowner oid, nspacl aclitem[]",
	"pg_catalog.pg_class": "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, " +
		"relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, reltoastrelid oid, " +
		"relhasindex bool, relisshared bool, relpersistence char, relkind char, relnatts int2, relchecks int2, " +
		"relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, relforcerowsecurity bool, " +
		"relispopulated bool, relreplident char, relispartition bool, relrewrite oid, relfrozenxid xid, relminmxid xid, " +
		"relacl aclitem[], reloptions text[], relpartbound pg_node_tree",
	"pg_catalog.pg_attribute": "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, " +
		"attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, attcompression char, " +
		"attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, " +
		"attislocal bool, attinhcount int4, attcollation oid, attacl aclitem[], attoptions text[], attfdwoptions text[]",
	"pg_catalog.pg_attrdef": "oid oid, adrelid oid, adnum int2, adbin pg_node_tree",
	"pg_catalog.pg_type": "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, " +
		"typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, typsubscript regproc, " +
		"typelem oid, typarray oid, typinput regproc, typoutput regproc, typreceive regproc, typsend regproc, " +
		"typalign char, typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, " +
		"typcollation oid, typdefault text, typacl aclitem[]",
	"pg_catalog.pg_am": "oid oid, amname name, amhandler regproc, amtype char",
	"pg_catalog.pg_language": "oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, " +
		"lanplcallfoid oid, laninline oid, lanvalidator oid, lanacl aclitem[]",
	"pg_catalog.pg_opclass": "oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid, opcfamily oid, " +
		"opcintype oid, opcdefault bool, opckeytype oid",
	"pg_catalog.pg_opfamily":  "oid oid, opfmethod oid, opfname name, opfnamespace oid, opfowner oid",
	"pg_catalog.pg_collation": "oid oid, collname name, collnamespace oid, collowner oid, collprovider char, collisdeterministic bool, collencoding int4, collcollate text, collctype text, colliculocale text, collversion text",
	"pg_catalog.pg_database": "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, " +
		"datallowconn bool, datconnlimit int4, dattablespace oid, datcollate text, datctype text, daticulocale text, " +
		"datcollversion text, datacl aclitem[]",
	"pg_catalog.pg_roles": "rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, " +
		"rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text, rolvaliduntil timestamptz, " +
		"rolbypassrls bool, rolconfig text[], oid oid",
	"pg_catalog.pg_user": "usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, " +
		"usebypassrls bool, passwd text, valuntil timestamptz, useconfig text[]",
	"pg_catalog.pg_auth_members": "roleid oid, member oid, grantor oid, admin_option bool",
	"pg_catalog.pg_proc": "oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, " +
		"prorows float4, provariadic oid, prosupport regproc, prokind char, prosecdef bool, proleakproof bool, " +
		"proisstrict bool, proretset bool, provolatile char, proparallel char, pronargs int2, pronargdefaults int2, " +
		"prorettype oid, proargtypes oidvector, proallargtypes oid[], proargmodes char[], proargnames text[], " +
		"prosrc text, probin text, proconfig text[], proacl aclitem[], proargdefaults pg_node_tree",
	"pg_catalog.pg_index": "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, " +
		"indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, indisclustered bool, " +
		"indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, indisreplident bool, indkey int2vector, " +
		"indcollation oidvector, indclass oidvector, indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree",
	"pg_catalog.pg_constraint": "oid oid, conname name, connamespace oid, contype char, condeferrable bool, " +
		"condeferred bool, convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid, " +
		"confrelid oid, confupdtype char, confdeltype char, confmatchtype char, conislocal bool, coninhcount int4, " +
		"connoinherit bool, conkey int2[], confkey int2[], conbin pg_node_tree",
	"pg_catalog.pg_description":           "objoid oid, classoid oid, objsubid int4, description text",
	"pg_catalog.pg_shdescription":         "objoid oid, classoid oid, description text",
	"pg_catalog.pg_policy":                "oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles oid[], polqual pg_node_tree, polwithcheck pg_node_tree",
	"pg_catalog.pg_statistic_ext":         "oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, stxstattarget int4, stxkeys int2vector, stxkind char[], stxexprs pg_node_tree",
	"pg_catalog.pg_publication":           "oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool, pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool",
	"pg_catalog.pg_publication_rel":       "oid oid, prpubid oid, prrelid oid, prqual pg_node_tree, prattrs int2vector",
	"pg_catalog.pg_publication_namespace": "oid oid, pnpubid oid, pnnspid oid",
	"pg_catalog.pg_inherits":              "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool",
	"pg_catalog.pg_rewrite":               "oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char, is_instead bool, ev_qual pg_node_tree, ev_action pg_node_tree",
	"pg_catalog.pg_trigger":               "oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2, tgenabled char, tgisinternal bool",
	"pg_catalog.pg_extension":             "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, extversion text",
	"pg_catalog.pg_tablespace":            "oid oid, spcname name, spcowner oid, spcacl aclitem[], spcoptions text[]",
	"pg_catalog.pg_settings": "name text, setting text, unit text, category text, short_desc text, extra_desc text, " +
		"context text, vartype text, source text, min_val text, max_val text, enumvals text[], boot_val text, " +
		"reset_val text, sourcefile text, sourceline int4, pending_restart bool",
	"pg_catalog.pg_tables": "schemaname name, tablename name, tableowner name, tablespace name, hasindexes bool, hasrules bool, hastriggers bool, rowsecurity bool",
	"pg_catalog.pg_views":  "schemaname name, viewname name, viewowner name, definition text",
	"pg_catalog.pg_matviews": "schemaname name, matviewname name, matviewowner name, tablespace name, hasindexes bool, " +
		"ispopulated bool, definition text",
	"pg_catalog.pg_stat_activity": "datid oid, datname name, pid int4, leader_pid int4, usesysid oid, usename name, " +
		"application_name text, client_addr text, client_hostname text, client_port int4, backend_start timestamptz, " +
		"xact_start timestamptz, query_start timestamptz, state_change timestamptz, wait_event_type text, " +
		"wait_event text, state text, backend_xid xid, backend_xmin xid, query_id int8, query text, backend_type text",
	"information_schema.schemata": "catalog_name name, schema_name name, schema_owner name, " +
		"default_character_set_catalog name, default_character_set_schema name, default_character_set_name name, sql_path text",
	"information_schema.tables": "table_catalog name, table_schema name, table_name name, table_type text, " +
		"self_referencing_column_name name, reference_generation text, user_defined_type_catalog name, " +
		"user_defined_type_schema name, user_defined_type_name name, is_insertable_into text, is_typed text, commit_action text",
	"information_schema.columns": "table_catalog name, table_schema name, table_name name, column_name name, " +
		"ordinal_position int4, column_default text, is_nullable text, data_type text, character_maximum_length int4, " +
		"character_octet_length int4, numeric_precision int4, numeric_precision_radix int4, numeric_scale int4, " +
		"datetime_precision int4, interval_type text, interval_precision int4, udt_catalog name, udt_schema name, " +
		"udt_name name, is_identity text, identity_generation text, is_generated text, generation_expression text, is_updatable text",
	"information_schema.views": "table_catalog name, table_schema name, table_name name, view_definition text, " +
		"check_option text, is_updatable text, is_insertable_into text, is_trigger_updatable text, " +
		"is_trigger_deletable text, is_trigger_insertable_into text",
	"information_schema.table_constraints": "constraint_catalog name, constraint_schema name, constraint_name name, " +
		"table_catalog name, table_schema name, table_name name, constraint_type text, is_deferrable text, " +
		"initially_deferred text, enforced text, nulls_distinct text",
	"information_schema.key_column_usage": "constraint_catalog name, constraint_schema name, constraint_name name, " +
		"table_catalog name, table_schema name, table_name name, column_name name, ordinal_position int4, " +
		"position_in_unique_constraint int4",
	// A set-returning function's rows, as a table (SystemFunctionTables).
	"pg_catalog.pg_get_keywords": "word text, catcode char, barelabel bool, catdesc text, baredesc text",
	// Asked by SQLAlchemy's reflection (empty: Hummer has no enums or
	// sequences).
	"pg_catalog.pg_enum":     "oid oid, enumtypid oid, enumsortorder float4, enumlabel name",
	"pg_catalog.pg_sequence": "seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, seqmin int8, seqcache int8, seqcycle bool",
	// Asked by pgcli's completion of functions (empty: no extensions).
	"pg_catalog.pg_depend": "classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, refobjsubid int4, deptype char",
}

// SystemFunctionTables are the system tables that stand for PostgreSQL's
// set-returning functions of no arguments (the dialect layer turns FROM
// pg_get_keywords() into FROM pg_get_keywords); pg_class does not list them.
var SystemFunctionTables = map[string]bool{"pg_get_keywords": true}

// systemTables are the system tables by qualified name, built once from
// systemColumns.
var systemTables = func() map[string]*Table {
	m := make(map[string]*Table, len(systemColumns))
	for name, cols := range systemColumns {
		t := &Table{Name: name, Engine: SystemEngine, Connection: "system://" + name}
		for _, c := range strings.Split(cols, ", ") {
			col, pgType, ok := strings.Cut(c, " ")
			if !ok {
				panic(fmt.Sprintf("sql: system table %s: column %q has no type", name, c))
			}
			t.Columns = append(t.Columns, types.Field{Name: col, Type: systemType(pgType)})
			t.pgTypes = append(t.pgTypes, pgType)
		}
		m[name] = t
	}
	return m
}()

// systemType is the Hummer type a system table's column of PostgreSQL type
// pgType has: the type itself where the engine holds it (oid, int2, int4,
// float4: described to clients as PostgreSQL's), else the type holding it.
func systemType(pgType string) types.Type {
	switch pgType {
	case "oid":
		return types.OidType
	case "int2":
		return types.Int2Type
	case "int4":
		return types.Int4Type
	case "int8", "xid":
		return types.Int64Type
	case "bool":
		return types.BoolType
	case "float4":
		return types.Float4Type
	case "float8":
		return types.Float64Type
	case "timestamptz":
		return types.TimestamptzType
	case "name":
		return types.NameType
	case "char":
		return types.CharType
	}
	return types.StringType // text, regproc, pg_node_tree and the arrays
}

// SystemTable returns the system table schema.name; an empty schema searches
// pg_catalog only.
func SystemTable(schema, name string) (*Table, bool) {
	if schema == "" {
		schema = PgCatalog
	}
	t, ok := systemTables[schema+"."+name]
	return t, ok
}

// IsSystemTableName reports whether name (schema.table) is a system table's.
func IsSystemTableName(name string) bool {
	_, ok := systemTables[name]
	return ok
}

// SystemTableNames lists the system tables' qualified names, sorted.
func SystemTableNames() []string {
	names := make([]string, 0, len(systemTables))
	for n := range systemTables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SystemColumnType returns the PostgreSQL type name of a system table's
// column i, for pg_attribute's rows about the catalog itself.
func SystemColumnType(t *Table, i int) string {
	if i < len(t.pgTypes) {
		return t.pgTypes[i]
	}
	return ""
}

// The object ids of the schemas.
const (
	PgCatalogOID         = 11
	PublicOID            = 2200
	InformationSchemaOID = 13000
)

// wellKnownOIDs are PostgreSQL's own oids of the system tables clients name
// by oid (classoid = 1259 is pg_class).
var wellKnownOIDs = map[string]int64{
	"pg_catalog.pg_type": 1247, "pg_catalog.pg_attribute": 1249, "pg_catalog.pg_proc": 1255,
	"pg_catalog.pg_class": 1259, "pg_catalog.pg_database": 1262, "pg_catalog.pg_namespace": 2615,
	"pg_catalog.pg_constraint": 2606, "pg_catalog.pg_index": 2610, "pg_catalog.pg_description": 2609,
	"pg_catalog.pg_attrdef": 2604, "pg_catalog.pg_am": 2601, "pg_catalog.pg_collation": 3456,
	"pg_catalog.pg_language": 2612, "pg_catalog.pg_opclass": 2616, "pg_catalog.pg_opfamily": 2753,
	"pg_catalog.pg_get_keywords": 1686, // the function's oid, so that no other table's moves
	"pg_catalog.pg_enum":         3501, "pg_catalog.pg_sequence": 2224, "pg_catalog.pg_depend": 2608,
}

// systemOIDs are the system tables' oids: the well-known ones, then 12000
// and up for the rest of pg_catalog and 13001 and up for information_schema,
// in name order. pg_table_is_visible tells information_schema's apart by
// that range.
var systemOIDs = func() map[string]int64 {
	m := make(map[string]int64, len(systemTables))
	next := map[string]int64{PgCatalog: 12000, InformationSchema: InformationSchemaOID + 1}
	for _, name := range SystemTableNames() {
		if oid, ok := wellKnownOIDs[name]; ok {
			m[name] = oid
			continue
		}
		schema, _, _ := strings.Cut(name, ".")
		m[name] = next[schema]
		next[schema]++
	}
	return m
}()

// SystemOID returns the oid of system table name (schema.table).
func SystemOID(name string) int64 { return systemOIDs[name] }

// Constraint and index oids of a table's PRIMARY KEY, derived from the
// table's so that they are as stable as it is.
func PrimaryKeyIndexOID(table int64) int64      { return table + 1_000_000 }
func PrimaryKeyConstraintOID(table int64) int64 { return table + 2_000_000 }
