package sql

// The functions PostgreSQL's clients call about the system catalog
// (systables.go), bound from what the catalog holds when the statement is
// bound: names by oid become CASE expressions over the catalog's objects, a
// name cast to an oid (regclass('docs')) a constant. The ones that need only
// their arguments are kernels of exec/expr (pgcatalog.go).

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// systemCatalogReader is what the catalog functions read of the catalog.
type systemCatalogReader interface {
	Tables() []*Table
	Users() []*User
}

// pgConstant are catalog functions whose answer does not depend on their
// arguments beyond NULL: Hummer has no comments, publications or
// statistics objects; every schema is on the search path; privileges are
// checked when a statement runs, so every has_*_privilege says true.
var pgConstant = map[string]types.Value{
	"obj_description": types.NullValue(types.StringType), "col_description": types.NullValue(types.StringType),
	"shobj_description":                  types.NullValue(types.StringType),
	"pg_get_function_result":             types.NullValue(types.StringType),
	"pg_get_function_arguments":          types.NullValue(types.StringType),
	"pg_get_function_identity_arguments": types.NullValue(types.StringType),
	"pg_get_function_sqlbody":            types.NullValue(types.StringType),
	"pg_get_statisticsobjdef_columns":    types.NullValue(types.StringType),
	"pg_get_triggerdef":                  types.NullValue(types.StringType),
	"pg_get_ruledef":                     types.NullValue(types.StringType),
	"pg_relation_is_publishable":         types.BoolValue(false),
	"pg_function_is_visible":             types.BoolValue(true),
	"pg_collation_is_visible":            types.BoolValue(true),
	"pg_opclass_is_visible":              types.BoolValue(true),
	"pg_opfamily_is_visible":             types.BoolValue(true),
	"has_table_privilege":                types.BoolValue(true), "has_schema_privilege": types.BoolValue(true),
	"has_database_privilege": types.BoolValue(true), "has_column_privilege": types.BoolValue(true),
	"has_any_column_privilege": types.BoolValue(true), "has_function_privilege": types.BoolValue(true),
	"has_sequence_privilege": types.BoolValue(true), "pg_has_role": types.BoolValue(true),
	"pg_table_size": types.IntValue(0), "pg_total_relation_size": types.IntValue(0),
	"pg_relation_size": types.IntValue(0), "pg_indexes_size": types.IntValue(0),
	// Hummer has no sequences (SQLAlchemy's get_columns asks).
	"pg_get_serial_sequence": types.NullValue(types.StringType),
	// Hummer's tablespaces are PostgreSQL's built-in ones, which have no
	// directory of their own (psql's \db).
	"pg_tablespace_location": types.StringValue(""),
	"pg_tablespace_size":     types.IntValue(0),
	// The one encoding Hummer has: UTF8's number (psql's \dO).
	"pg_char_to_encoding": types.IntValue(6),
}

// bindPgFunc binds the catalog functions; ok is false for other names.
func (b *binder) bindPgFunc(ctx *exprCtx, n *ast.FuncCallExpr) (e *expr.Expr, ok bool, err error) {
	name := n.FnName.L
	_, constant := pgConstant[name]
	switch name {
	case "pg_get_userbyid", "regrole", "pg_table_is_visible", "pg_type_is_visible", "regclass", "regtype", "regnamespace",
		"regproc", "regprocedure", "pg_get_expr", "pg_encoding_to_char", "pg_get_constraintdef",
		"pg_get_indexdef", "pg_get_viewdef", "quote_ident", "bool", "timestamptz", "pg_typeof", "bytea", "interval", "numeric":
	default:
		if !constant {
			return nil, false, nil
		}
	}
	if len(n.Args) == 0 {
		return nil, true, b.errorf(ErrUnknownFunction, n, "function %s() does not exist", name)
	}
	// regclass('docs'): the oid of the table the text names.
	if s, isText := stringLiteral(n.Args[0]); isText && (name == "regclass" || name == "regtype" || name == "regnamespace" || name == "regrole") {
		oid, found := b.oidOf(name, s)
		if !found {
			return nil, true, b.errorf(ErrUnknownTable, n, "%s \"%s\" does not exist", map[string]string{
				"regclass": "relation", "regtype": "type", "regnamespace": "schema", "regrole": "role"}[name], s)
		}
		if name == "regclass" {
			return expr.Literal(types.Value{Type: types.RegclassType, Int: oid}), true, nil
		}
		return expr.Literal(types.IntValue(oid)), true, nil
	}
	args := make([]*expr.Expr, len(n.Args))
	for i, a := range n.Args {
		if args[i], err = b.bindExpr(ctx, a); err != nil {
			return nil, true, err
		}
	}
	x := args[0]
	if constant {
		return expr.Call("case", pgConstant[name].Type, isNotNull(x), expr.Literal(pgConstant[name]),
			expr.Literal(types.NullValue(pgConstant[name].Type))), true, nil
	}
	switch name {
	case "bytea":
		// bytea's input function reads text (its hex or escape format).
		if x.Type.ID != types.String && x.Type.ID != types.Null {
			return nil, true, b.errorf(ErrType, n, "cannot cast type %s to bytea", x.Type)
		}
		return expr.Cast(x, types.ByteaType), true, nil
	case "numeric":
		e, err := b.unconstrainedNumeric(n, x)
		return e, true, err
	case "interval":
		// interval's input function reads text; the value is its output.
		if x.Type.ID != types.String && x.Type.ID != types.Null {
			return nil, true, b.errorf(ErrType, n, "cannot cast type %s to interval", x.Type)
		}
		return expr.Cast(x, types.IntervalType), true, nil
	case "pg_typeof":
		// A regtype, printed as its name.
		return expr.Literal(types.StringValue(expr.FormatType(PgTypeOID(x.Type), -1))), true, nil
	case "pg_get_expr", "regproc", "regprocedure":
		return expr.Cast(x, types.StringType), true, nil
	case "quote_ident":
		e, err := b.call(n, "$quote_ident", x)
		return e, true, err
	case "bool":
		if !expr.CanCast(x.Type, types.BoolType) {
			return nil, true, b.errorf(ErrType, n, "cannot cast type %s to boolean", x.Type)
		}
		return expr.Cast(x, types.BoolType), true, nil
	case "timestamptz":
		// The instant: text with a zone is the instant it names, text or a
		// timestamp without one the wall time in the session's TimeZone.
		if !expr.CanCast(x.Type, types.TimestamptzType) || x.Type.ID == types.Bool {
			return nil, true, b.errorf(ErrType, n, "cannot cast type %s to timestamp with time zone", x.Type)
		}
		e, err := b.zonedCast(n, x, types.TimestamptzType)
		return e, true, err
	case "pg_table_is_visible", "pg_type_is_visible":
		// Every schema but information_schema is on the search path (its
		// tables' and types' oids are 13000 to 13999).
		lo, err := b.call(n, "<", x, expr.Literal(types.IntValue(InformationSchemaOID)))
		if err != nil {
			return nil, true, err
		}
		hi, err := b.call(n, ">=", x, expr.Literal(types.IntValue(InformationSchemaOID+1000)))
		if err != nil {
			return nil, true, err
		}
		e, err := b.call(n, "or", lo, hi)
		return e, true, err
	case "pg_encoding_to_char":
		return b.oidNames(n, x, map[int64]string{6: "UTF8"}, "")
	case "regnamespace":
		return b.oidNames(n, x, map[int64]string{PgCatalogOID: PgCatalog, PublicOID: "public", InformationSchemaOID: InformationSchema}, "oid")
	case "regtype":
		e, err := b.call(n, "format_type", x, expr.Literal(types.NullValue(types.Int64Type)))
		return e, true, err
	}
	cat, _ := b.cat.(systemCatalogReader)
	names := map[int64]string{}
	switch name {
	case "pg_get_userbyid", "regrole":
		names[6171] = "pg_database_owner" // the owner of public (session/pgcatalog.go)
		if cat != nil {
			for _, u := range cat.Users() {
				names[u.OID] = u.Name
			}
		}
		if name == "regrole" {
			return b.oidNames(n, x, names, "oid")
		}
		return b.oidNames(n, x, names, "unknown")
	case "regclass":
		// A regclass is the oid, compared as one; it prints as the
		// relation's name (regclassName).
		if x.Type.ID == types.String {
			return expr.Cast(b.regclassOfText(x), types.RegclassType), true, nil // bind_pgclients.go
		}
		if x.Type.ID != types.Int64 && x.Type.ID != types.Null {
			return nil, true, b.errorf(ErrType, n, "cannot cast type %s to regclass", x.Type)
		}
		return expr.Cast(x, types.RegclassType), true, nil
	case "pg_get_constraintdef", "pg_get_indexdef":
		if name == "pg_get_indexdef" && len(args) > 1 {
			return b.bindIndexColumnDef(n, args) // bind_pgjdbc.go
		}
		if cat != nil {
			for _, t := range cat.Tables() {
				if len(t.PrimaryKey) == 0 {
					continue
				}
				if name == "pg_get_constraintdef" {
					names[PrimaryKeyConstraintOID(t.OID)] = "PRIMARY KEY (" + quoteIdents(t.PrimaryKey) + ")"
				} else {
					names[PrimaryKeyIndexOID(t.OID)] = primaryKeyIndexDef(t)
				}
			}
		}
		return b.oidNames(n, x, names, "")
	case "pg_get_viewdef":
		if cat != nil {
			for _, t := range cat.Tables() {
				if t.IsView() {
					names[t.OID] = " " + t.Query + ";"
				}
			}
		}
		return b.oidNames(n, x, names, "")
	}
	return nil, false, nil
}

// oidNames binds a lookup of oid x in names: CASE x WHEN oid THEN name ...
// ELSE other END, other being "" (NULL), "oid" (x itself as text) or
// "unknown" (PostgreSQL's "unknown (OID=x)").
func (b *binder) oidNames(n ast.Node, x *expr.Expr, names map[int64]string, other string) (*expr.Expr, bool, error) {
	if x.Type.ID != types.Int64 && x.Type.ID != types.Null {
		return nil, true, b.errorf(ErrType, n, "function %s(%s) does not exist", n.(*ast.FuncCallExpr).FnName.L, x.Type)
	}
	x = expr.Cast(x, types.Int64Type)
	var args []*expr.Expr
	for _, oid := range slices.Sorted(maps.Keys(names)) {
		args = append(args, expr.Call("=", types.BoolType, x, expr.Literal(types.IntValue(oid))),
			expr.Literal(types.StringValue(names[oid])))
	}
	text := expr.Cast(x, types.StringType)
	els := expr.Literal(types.NullValue(types.StringType))
	switch other {
	case "oid":
		els = text
	case "unknown":
		els = expr.Call("||", types.StringType, expr.Call("||", types.StringType,
			expr.Literal(types.StringValue("unknown (OID=")), text), expr.Literal(types.StringValue(")")))
	}
	if len(args) == 0 {
		return els, true, nil
	}
	return expr.Call("case", types.StringType, append(args, els)...), true, nil
}

// oidOf finds the oid of the object of kind reg (regclass, regtype,
// regnamespace, regrole) that text names: a number is an oid already; a
// name may be schema-qualified, and is lower-cased unless double-quoted.
func (b *binder) oidOf(reg, text string) (int64, bool) {
	if oid, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err == nil {
		return oid, true
	}
	schema, name := "", strings.TrimSpace(text)
	if i := strings.LastIndexByte(name, '.'); i >= 0 && reg == "regclass" {
		schema, name = unquoteName(name[:i]), name[i+1:]
	}
	name = unquoteName(name)
	cat, _ := b.cat.(systemCatalogReader)
	switch reg {
	case "regclass":
		if schema == "" || schema == PgCatalog || schema == InformationSchema {
			s := schema
			if s == "" {
				s = PgCatalog
			}
			if _, ok := SystemTable(s, name); ok {
				return SystemOID(s + "." + name), true
			}
		}
		if (schema == "" || schema == "public") && cat != nil {
			for _, t := range cat.Tables() {
				if t.Name == name {
					return t.OID, true
				}
			}
		}
	case "regnamespace":
		oid, ok := map[string]int64{PgCatalog: PgCatalogOID, "public": PublicOID, InformationSchema: InformationSchemaOID}[name]
		return oid, ok
	case "regrole":
		if cat != nil {
			for _, u := range cat.Users() {
				if u.Name == name {
					return u.OID, true
				}
			}
		}
	case "regtype":
		name = strings.TrimPrefix(name, PgCatalog+".") // 'pg_catalog.trigger'::pg_catalog.regtype
		for oid := range pgTypeOIDs {
			if expr.FormatType(oid, -1) == name || pgTypeOIDs[oid] == name {
				return oid, true
			}
		}
		if oid, ok := pseudoTypeOIDs[name]; ok { // bind_pgclients.go
			return oid, true
		}
	}
	return 0, false
}

// unquoteName reads an identifier as PostgreSQL does: "Quoted" keeps its
// case, anything else is lower-cased.
func unquoteName(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// stringLiteral returns the text of a string literal.
func stringLiteral(n ast.ExprNode) (string, bool) {
	v, ok := n.(ast.ValueExpr)
	if !ok {
		return "", false
	}
	s, ok := v.GetValue().(string)
	return s, ok
}

func isNotNull(x *expr.Expr) *expr.Expr {
	return expr.Call("is_not_null", types.BoolType, x)
}

// pgTypeOIDs are pg_type's rows: each type's oid and typname.
var pgTypeOIDs = map[int64]string{
	16: "bool", 17: "bytea", 18: "char", 19: "name", 20: "int8", 21: "int2", 22: "int2vector", 23: "int4",
	24: "regproc", 25: "text", 26: "oid", 28: "xid", 30: "oidvector", 194: "pg_node_tree", 700: "float4",
	701: "float8", 1033: "aclitem", 1042: "bpchar", 1043: "varchar", 1082: "date", 1114: "timestamp", 1184: "timestamptz",
	1186: "interval", 1700: "numeric", 2205: "regclass", 2206: "regtype", 4089: "regnamespace",
}

// PgTypes lists pg_type's rows: oid -> typname, array types included (their
// typname is _ and the element's).
func PgTypes() map[int64]string {
	m := make(map[int64]string, 2*len(pgTypeOIDs))
	for oid, name := range pgTypeOIDs {
		m[oid] = name
	}
	for arr, elem := range expr.PgArrayTypes {
		m[arr] = "_" + pgTypeOIDs[elem]
	}
	return m
}

// PgTypeOID is the pg_type oid of a Hummer type (as the wire reports it).
func PgTypeOID(t types.Type) int64 {
	if t.OID != 0 {
		return int64(t.OID)
	}
	switch t.ID {
	case types.Bool:
		return 16
	case types.Int64:
		return 20
	case types.Float64:
		return 701
	case types.Decimal:
		return 1700
	case types.Timestamp:
		return 1114
	case types.Date:
		return 1082
	}
	return 25
}

// PgTypmod is the typmod of a Hummer type: numeric's precision and scale,
// the character types' length.
func PgTypmod(t types.Type) int64 {
	if t.ID == types.Decimal {
		return int64(t.Precision)<<16 | int64(t.Scale) + 4
	}
	if t.Len > 0 {
		return int64(t.Len) + 4
	}
	return -1
}

// PgSystemTypeOID is the pg_type oid of a system table column's PostgreSQL
// type name.
func PgSystemTypeOID(pgType string) int64 {
	if strings.HasSuffix(pgType, "[]") {
		elem := PgSystemTypeOID(strings.TrimSuffix(pgType, "[]"))
		for arr, e := range expr.PgArrayTypes {
			if e == elem {
				return arr
			}
		}
		return 25
	}
	for oid, name := range pgTypeOIDs {
		if name == pgType {
			return oid
		}
	}
	return 25
}

// bindRegexp binds s REGEXP pattern (PostgreSQL's s ~ pattern, which the
// dialect layer rewrites to it) as regexp_like: case-sensitive, as ~ is.
func (b *binder) bindRegexp(ctx *exprCtx, n *ast.PatternRegexpExpr) (*expr.Expr, error) {
	s, err := b.bindExpr(ctx, n.Expr)
	if err != nil {
		return nil, err
	}
	p, err := b.bindExpr(ctx, n.Pattern)
	if err != nil {
		return nil, err
	}
	e, err := b.call(n, "regexp_like", s, p)
	if err != nil || !n.Not {
		return e, err
	}
	return b.call(n, "not", e)
}
