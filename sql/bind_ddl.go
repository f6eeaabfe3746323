package sql

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	ptypes "github.com/pingcap/tidb/pkg/parser/types"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// bindCreateTable binds CREATE TABLE t (cols) [ENGINE=connector CONNECTION='url']
// and CREATE TABLE t AS SELECT .... Without ENGINE (or with ENGINE=hummer) the
// table is stored by Hummer, which enforces its PRIMARY KEY and NOT NULL
// columns and writes DEFAULT values; a connector-backed table records its
// PRIMARY KEY (its sink upserts by it) and ignores NOT NULL. COMMENT is
// accepted; every other constraint or option is refused. The connector's own
// options are checked by the session, not here.
func (b *binder) bindCreateTable(s *ast.CreateTableStmt) (Statement, error) {
	switch {
	case s.TemporaryKeyword != ast.TemporaryNone:
		return nil, b.errorf(ErrUnsupported, nil, "temporary tables are not supported")
	case s.ReferTable != nil:
		return nil, b.errorf(ErrUnsupported, nil, "CREATE TABLE ... LIKE is not supported")
	case s.Select != nil && len(s.Cols) > 0:
		return nil, b.errorf(ErrUnsupported, nil, "CREATE TABLE ... AS SELECT takes its columns from the query: give them names with AS in the SELECT list")
	case s.Partition != nil:
		return nil, b.errorf(ErrUnsupported, nil, "partitioned tables are not supported")
	}
	name := s.Table.Name.O
	if sc := s.Table.Schema.L; sc != "" && sc != "public" {
		return nil, Errorf(ErrUnsupported, b.identPos(s.Table.Schema.O), "schemas are not supported")
	}
	if b.cat != nil && !s.IfNotExists {
		if _, ok := b.cat.Table(name); ok {
			return nil, Errorf(ErrDuplicateTable, b.identPos(s.Table.Name.O, "table", "exists"), "relation \"%s\" already exists", name)
		}
	}
	t := &Table{Name: name}
	for _, c := range s.Cols {
		cname := c.Name.Name.O
		if columnIndex(t.Columns, cname) >= 0 {
			return nil, Errorf(ErrDuplicateColumn, b.identPos(c.Name.Name.O, ","), "column \"%s\" specified more than once", cname)
		}
		typ, err := b.sqlType(c.Tp, nil)
		if err != nil {
			if e, ok := err.(*Error); ok && e.Pos == 0 {
				e.Pos = b.identPos(c.Name.Name.O, "(", ",")
			}
			return nil, err
		}
		if pg, ok := b.columnTypeFact(cname); ok { // timestamptz, bytea, interval: dialect_pg.go
			typ = pg
		}
		var def ast.ExprNode
		for _, o := range c.Options {
			switch o.Tp {
			case ast.ColumnOptionNull, ast.ColumnOptionComment:
			case ast.ColumnOptionNotNull:
				t.NotNull = append(t.NotNull, cname)
			case ast.ColumnOptionDefaultValue:
				def = o.Expr
			case ast.ColumnOptionPrimaryKey:
				if len(t.PrimaryKey) > 0 {
					return nil, b.errorf(ErrInvalidValue, nil, "multiple primary keys for table \"%s\" are not allowed", name)
				}
				t.PrimaryKey = []string{cname}
			default:
				return nil, Errorf(ErrUnsupported, b.identPos(c.Name.Name.O, "(", ","), "column option %s is not supported", columnOptionName(o))
			}
		}
		t.Columns = append(t.Columns, types.Field{Name: cname, Type: typ})
		if def != nil {
			v, err := b.defaultValue(def, cname, typ)
			if err != nil {
				return nil, err
			}
			if t.Defaults == nil {
				t.Defaults = map[string]types.Value{}
			}
			t.Defaults[cname] = v
		}
	}
	var query *Query
	if s.Select != nil {
		p, err := b.bindResultSet(s.Select)
		if err != nil {
			return nil, err
		}
		for _, f := range p.Schema() {
			if columnIndex(t.Columns, f.Name) >= 0 {
				return nil, b.errorf(ErrDuplicateColumn, nil, "column \"%s\" specified more than once", f.Name)
			}
			typ := f.Type
			if typ.ID == types.Null {
				typ = types.StringType // SELECT NULL AS x: text, as PostgreSQL's
			}
			t.Columns = append(t.Columns, types.Field{Name: f.Name, Type: typ})
		}
		query = &Query{Plan: castPlan(p, t.Columns)}
	}
	if len(t.Columns) == 0 {
		return nil, b.errorf(ErrInvalidValue, nil, "a table needs at least one column")
	}
	for _, k := range s.Constraints {
		if k.Tp == ast.ConstraintCheck && strings.HasPrefix(k.Name, watermarkConstraint) {
			if err := b.bindWatermark(t, k); err != nil {
				return nil, err
			}
			continue
		}
		if k.Tp != ast.ConstraintPrimaryKey {
			return nil, b.errorf(ErrUnsupported, nil, "constraints other than PRIMARY KEY are not supported")
		}
		if len(t.PrimaryKey) > 0 {
			return nil, b.errorf(ErrInvalidValue, nil, "multiple primary keys for table \"%s\" are not allowed", name)
		}
		for _, key := range k.Keys {
			if key.Column == nil {
				return nil, b.errorf(ErrUnsupported, nil, "expressions in PRIMARY KEY are not supported")
			}
			cname := key.Column.Name.O
			if columnIndex(t.Columns, cname) < 0 {
				return nil, Errorf(ErrUnknownColumn, b.identPos(key.Column.Name.O, "(", ","), "column \"%s\" named in key does not exist", cname)
			}
			t.PrimaryKey = append(t.PrimaryKey, cname)
		}
	}
	for _, o := range s.Options {
		switch o.Tp {
		case ast.TableOptionEngine:
			t.Engine = strings.ToLower(o.StrValue)
		case ast.TableOptionConnection:
			t.Connection = o.StrValue
		case ast.TableOptionComment, ast.TableOptionCharset, ast.TableOptionCollate:
		default:
			return nil, b.errorf(ErrUnsupported, nil, "this table option is not supported (only ENGINE, CONNECTION and COMMENT are)")
		}
	}
	if t.Engine == "" {
		t.Engine = StoredEngine
	}
	if !t.IsStored() {
		switch {
		case query != nil:
			return nil, b.errorf(ErrUnsupported, nil, "CREATE TABLE ... AS SELECT makes a table Hummer stores: leave out ENGINE (to fill a connector's table, CREATE it, then INSERT INTO it SELECT ...)")
		case t.Defaults != nil:
			return nil, b.errorf(ErrUnsupported, nil, "DEFAULT is for tables Hummer stores (without ENGINE): a connector's table is written only by INSERT ... SELECT of all its columns")
		}
		t.NotNull = nil // not enforced on what a connector reads
	} else {
		if t.Connection != "" {
			return nil, b.errorf(ErrInvalidValue, nil, "a table Hummer stores takes no CONNECTION: its place in the data directory is its own")
		}
		for _, k := range t.PrimaryKey { // a key's columns are NOT NULL, as in PostgreSQL
			if !slices.Contains(t.NotNull, k) {
				t.NotNull = append(t.NotNull, k)
			}
		}
	}
	return &CreateTable{Table: t, IfNotExists: s.IfNotExists, Query: query}, nil
}

// defaultValue binds a column's DEFAULT: a constant of a type assignable to
// the column's, cast to it.
func (b *binder) defaultValue(n ast.ExprNode, column string, typ types.Type) (types.Value, error) {
	e, err := b.bindExpr(&exprCtx{scope: &scope{}, clause: "DEFAULT"}, n)
	if err != nil {
		return types.Value{}, err
	}
	if !assignableExpr(e, typ) {
		return types.Value{}, b.errorf(ErrType, n, "column \"%s\" is of type %s but default expression is of type %s", column, typ, e.Type)
	}
	e = foldExpr(expr.Cast(e, typ))
	if !e.IsConstant() {
		return types.Value{}, b.errorf(ErrUnsupported, n, "DEFAULT must be a constant")
	}
	v, err := expr.EvalConst(e)
	if err != nil {
		return types.Value{}, b.errorf(ErrInvalidValue, n, "DEFAULT of column \"%s\": %v", column, err)
	}
	v.Type = typ
	return v, nil
}

// castPlan projects p's columns cast to the types of cols (same count), when
// any differs.
func castPlan(p Plan, cols types.Schema) Plan {
	in := p.Schema()
	exprs := make([]*expr.Expr, len(in))
	cast := false
	for i, f := range in {
		exprs[i] = expr.Cast(expr.Column(i, f.Type, f.Name), cols[i].Type)
		cast = cast || f.Type != cols[i].Type || f.Name != cols[i].Name
	}
	if !cast {
		return p
	}
	return &Project{Input: p, Exprs: exprs, Out: cols}
}

// bindResultSet binds the query of INSERT ... SELECT, CREATE TABLE AS or
// CREATE VIEW: a SELECT or a set operation of them.
func (b *binder) bindResultSet(n ast.ResultSetNode) (Plan, error) {
	switch n := n.(type) {
	case *ast.SelectStmt:
		return b.bindQuery(n)
	case *ast.SetOprStmt:
		return b.bindSetOpr(n)
	}
	return nil, b.errorf(ErrUnsupported, nil, "this query form is not supported here")
}

func columnOptionName(o *ast.ColumnOption) string {
	switch o.Tp {
	case ast.ColumnOptionAutoIncrement:
		return "AUTO_INCREMENT"
	case ast.ColumnOptionDefaultValue:
		return "DEFAULT"
	case ast.ColumnOptionUniqKey:
		return "UNIQUE"
	case ast.ColumnOptionOnUpdate:
		return "ON UPDATE"
	case ast.ColumnOptionGenerated:
		return "GENERATED"
	case ast.ColumnOptionReference:
		return "REFERENCES"
	case ast.ColumnOptionCollate:
		return "COLLATE"
	case ast.ColumnOptionCheck:
		return "CHECK"
	}
	return "this"
}

// sqlType maps a parsed column or CAST type to the engine's types, as
// PostgreSQL names them: BIGINT -> bigint; INT/INTEGER/MEDIUMINT -> integer
// and SMALLINT -> smallint (held as bigint, types.OIDInt4); TINYINT -> bigint,
// BOOLEAN (which the parser reads as TINYINT(1)) -> boolean; DOUBLE -> double
// and FLOAT/FLOAT4 -> real (the dialect layer tells PostgreSQL's REAL and
// FLOAT apart: columnTypeFact, castTypeFact); DECIMAL/NUMERIC(p,s) ->
// decimal (MySQL's default DECIMAL is (10,0)); VARCHAR(n) -> character
// varying(n), CHAR(n) -> character(n) (CHAR alone is character(1) in a
// column, text in a CAST, as MySQL's CAST AS CHAR is), TEXT -> text;
// DATETIME/TIMESTAMP -> timestamp, DATE -> date. node positions errors (nil:
// none).
func (b *binder) sqlType(ft *ptypes.FieldType, node ast.Node) (types.Type, error) {
	switch ft.GetType() {
	case mysql.TypeTiny:
		if ft.GetFlen() == 1 {
			return types.BoolType, nil
		}
		return types.Int64Type, nil
	case mysql.TypeShort:
		return types.Int2Type, nil
	case mysql.TypeInt24, mysql.TypeLong:
		return types.Int4Type, nil
	case mysql.TypeLonglong:
		return types.Int64Type, nil
	case mysql.TypeFloat:
		return types.Float4Type, nil
	case mysql.TypeDouble:
		return types.Float64Type, nil
	case mysql.TypeNewDecimal:
		p, s := ft.GetFlen(), ft.GetDecimal()
		if p == ptypes.UnspecifiedLength {
			p = 10
		}
		if s == ptypes.UnspecifiedLength {
			s = 0
		}
		if p < 1 || p > 38 {
			return types.Type{}, b.errorf(ErrInvalidValue, node, "NUMERIC precision %d must be between 1 and 38", p)
		}
		if s > p {
			return types.Type{}, b.errorf(ErrInvalidValue, node, "NUMERIC scale %d must be between 0 and precision %d", s, p)
		}
		return types.DecimalType(p, s), nil
	case mysql.TypeVarchar, mysql.TypeVarString, mysql.TypeString,
		mysql.TypeTinyBlob, mysql.TypeBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		if ft.GetCharset() == "binary" {
			return types.Type{}, b.errorf(ErrUnsupported, node, "binary strings are not supported")
		}
		n := ft.GetFlen()
		switch ft.GetType() {
		case mysql.TypeVarchar:
			return types.VarcharType(n), nil
		case mysql.TypeString:
			return types.BpcharType(max(n, 1)), nil
		}
		return types.StringType, nil
	case mysql.TypeDate:
		return types.DateType, nil
	case mysql.TypeDatetime, mysql.TypeTimestamp:
		return types.TimestampType, nil
	}
	return types.Type{}, b.errorf(ErrUnsupported, node, "type %s is not supported", ft.String())
}

func (b *binder) bindDropTable(s *ast.DropTableStmt) (Statement, error) {
	var names []string
	for _, tn := range s.Tables {
		name := tn.Name.O
		if b.cat != nil {
			t, ok := b.cat.Table(name)
			switch {
			case !ok && !s.IfExists:
				what := "table"
				if s.IsView {
					what = "view"
				}
				return nil, Errorf(ErrUnknownTable, b.identPos(tn.Name.O, tableAfter...), "%s \"%s\" does not exist", what, name)
			case ok && t.IsView() && !s.IsView:
				return nil, Errorf(ErrWrongObjectType, b.identPos(tn.Name.O, tableAfter...), "\"%s\" is not a table: use DROP VIEW to remove a view", name)
			case ok && !t.IsView() && s.IsView:
				return nil, Errorf(ErrWrongObjectType, b.identPos(tn.Name.O, tableAfter...), "\"%s\" is not a view: use DROP TABLE to remove a table", name)
			}
		}
		names = append(names, name)
	}
	if s.IsView {
		return &DropView{Names: names, IfExists: s.IfExists}, nil
	}
	return &DropTable{Names: names, IfExists: s.IfExists}, nil
}

// bindCreateView binds CREATE VIEW v [(columns)] AS SELECT ...; the view's
// columns are the query's, renamed by the list.
func (b *binder) bindCreateView(s *ast.CreateViewStmt) (Statement, error) {
	if s.OrReplace {
		return nil, b.errorf(ErrUnsupported, nil, "CREATE OR REPLACE VIEW is not supported: DROP VIEW, then CREATE VIEW")
	}
	// A view's query is bound again, without a session, when the engine
	// restarts: it may not use what only a session knows (current_user).
	b.session = nil
	name := s.ViewName.Name.O
	if sc := s.ViewName.Schema.L; sc != "" && sc != "public" {
		return nil, Errorf(ErrUnsupported, b.identPos(s.ViewName.Schema.O), "schemas are not supported")
	}
	if b.cat != nil {
		if _, ok := b.cat.Table(name); ok {
			return nil, Errorf(ErrDuplicateTable, b.identPos(s.ViewName.Name.O, "view"), "relation \"%s\" already exists", name)
		}
	}
	sel, ok := s.Select.(ast.ResultSetNode)
	if !ok {
		return nil, b.errorf(ErrUnsupported, nil, "a view takes a SELECT or a set operation of them")
	}
	p, err := b.bindResultSet(sel) // a SELECT, UNION, INTERSECT or EXCEPT
	if err != nil {
		return nil, err
	}
	cols := append(types.Schema{}, p.Schema()...)
	if len(s.Cols) > 0 {
		if len(s.Cols) != len(cols) {
			return nil, b.errorf(ErrType, nil, "CREATE VIEW names %d columns for a query of %d", len(s.Cols), len(cols))
		}
		for i, c := range s.Cols {
			cols[i].Name = c.O
		}
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.Name] {
			return nil, b.errorf(ErrDuplicateColumn, nil, "column \"%s\" specified more than once: name the view's columns, as in CREATE VIEW %s (a, b) AS ...", c.Name, name)
		}
		seen[c.Name] = true
	}
	view := &Table{Name: name, Columns: cols, Engine: ViewEngine, Query: b.userText(sel)}
	return &CreateView{View: view, Query: &Query{Plan: p}}, nil
}

// bindShow binds SHOW TABLES, SHOW COLUMNS FROM t (as DESCRIBE t) and SHOW
// VARIABLES [LIKE 'name'] (as Show; an empty Name means every variable).
func (b *binder) bindShow(s *ast.ShowStmt) (Statement, error) {
	switch s.Tp {
	case ast.ShowProcessList:
		return &ShowJobs{}, nil
	case ast.ShowTables:
		if s.Pattern != nil || s.Where != nil || s.DBName != "" {
			return nil, b.errorf(ErrUnsupported, nil, "SHOW TABLES takes no LIKE, WHERE or FROM")
		}
		return &ShowTables{}, nil
	case ast.ShowColumns:
		if s.Pattern != nil || s.Where != nil {
			return nil, b.errorf(ErrUnsupported, nil, "SHOW COLUMNS takes no LIKE or WHERE")
		}
		t, err := b.lookupTable(s.Table)
		if err != nil {
			return nil, err
		}
		return &Describe{Table: t}, nil
	case ast.ShowVariables:
		if s.Where != nil {
			return nil, b.errorf(ErrUnsupported, nil, "SHOW VARIABLES takes no WHERE")
		}
		if s.Pattern == nil {
			return &Show{}, nil
		}
		v, ok := s.Pattern.Pattern.(ast.ValueExpr)
		name := ""
		if ok {
			name, _ = v.GetValue().(string)
		}
		if name == "" || strings.Contains(name, "%") {
			return nil, b.errorf(ErrUnsupported, s.Pattern.Pattern, "SHOW VARIABLES LIKE takes a variable name, not a pattern")
		}
		return &Show{Name: strings.ToLower(name)}, nil
	}
	return nil, b.errorf(ErrUnsupported, nil, "%s is not supported", statementName(s))
}

// bindSet binds the SETs the dialect layer leaves to the parser
// (PostgreSQL's own forms are session commands: dialect_session.go): SET
// [SESSION] name = <constant expression>, whose value is the expression's,
// as text. Names are lower-cased and not checked here: the session knows its
// variables.
func (b *binder) bindSet(s *ast.SetStmt) (Statement, error) {
	if len(s.Variables) != 1 {
		return nil, b.errorf(ErrUnsupported, nil, "SET takes one variable at a time")
	}
	v := s.Variables[0]
	switch {
	case v.Name == ast.SetNames || v.Name == ast.SetCharset:
		return nil, b.errorf(ErrUnsupported, nil, "SET NAMES is not supported: the engine speaks UTF-8")
	case !v.IsSystem:
		return nil, b.errorf(ErrUnsupported, nil, "user variables (@name) are not supported")
	case v.IsGlobal || v.IsInstance:
		return nil, b.errorf(ErrUnsupported, nil, "SET GLOBAL is not supported; variables are per session")
	}
	set := &Set{Name: strings.ToLower(v.Name)}
	if _, ok := v.Value.(*ast.DefaultExpr); ok {
		return set, nil
	}
	e, err := b.bindExpr(&exprCtx{scope: &scope{}, clause: "SET"}, v.Value)
	if err != nil {
		return nil, err
	}
	if !constant(e) {
		return nil, b.errorf(ErrInvalidValue, v.Value, "SET %s takes a constant value", set.Name)
	}
	val, err := expr.EvalConst(e)
	if err != nil {
		return nil, b.errorf(ErrInvalidValue, v.Value, "%s", err.Error())
	}
	if val.Null {
		return nil, b.errorf(ErrInvalidValue, v.Value, "SET %s takes a value, not NULL", set.Name)
	}
	set.Values = []string{formatSetting(val)}
	return set, nil
}

// bindExplain binds EXPLAIN [ANALYZE] [FORMAT='text'|'dot'] <select>, and DESCRIBE t,
// which the parser also reads as an ExplainStmt.
func (b *binder) bindExplain(s *ast.ExplainStmt) (Statement, error) {
	if show, ok := s.Stmt.(*ast.ShowStmt); ok {
		return b.bindShow(show)
	}
	format := strings.ToLower(s.Format)
	if s.Analyze && format == "dot" {
		return nil, b.errorf(ErrUnsupported, nil, "EXPLAIN ANALYZE prints text only")
	}
	switch format {
	case "", "row", "text", "traditional", "brief":
		format = "text"
	case "dot":
	default:
		return nil, b.errorf(ErrInvalidValue, nil, "EXPLAIN FORMAT must be 'text' or 'dot', not \"%s\"", s.Format)
	}
	sel, ok := s.Stmt.(*ast.SelectStmt)
	if !ok {
		return nil, b.errorf(ErrUnsupported, nil, "EXPLAIN explains SELECT statements only")
	}
	p, err := b.bindQuery(sel)
	if err != nil {
		return nil, err
	}
	return &Explain{Format: format, Analyze: s.Analyze, Query: &Query{Plan: p}}, nil
}

// userText is n's text as the user wrote it where the parser's is the same
// words with unquoted ones folded (foldIdentifiers), else the parser's (a
// rewritten form that reads the same). The parser gives no offset for a
// statement's parts, so it is looked for in the statement's text.
func (b *binder) userText(n ast.Node) string {
	txt := n.Text()
	if i := strings.Index(lowerASCII(b.text), lowerASCII(txt)); i >= 0 && txt != "" {
		return b.text[i : i+len(txt)]
	}
	return txt
}
