package sql

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Bind resolves one parsed statement against the catalog: names become column
// positions and catalog entries, every expression is type-checked with
// expr.Resolve (casts inserted where a function wants them), and a SELECT becomes
// a logical Plan. query is the full text the statement was parsed from (Parse
// records where each statement starts in it); error positions point into it.
//
// Errors about the statement are *Error values. The plan is not optimised: run
// Optimize on a Query's plan before planning it.
//
// Bind binds outside any client's session (the engine's own statements,
// views): the session functions are refused; BindSession gives them one.
func Bind(stmt ast.StmtNode, cat CatalogReader, query string) (Statement, error) {
	return bindWith(stmt, cat, query, nil, nil)
}

// BindParams is Bind for a statement whose parameters' types the client
// declared (in a Parse message): paramTypes[n-1] is $n's, the null type or
// none where it declared none (the type is then inferred from where the
// parameter stands). A declared parameter binds as an expression of its type,
// as a column would.
func BindParams(stmt ast.StmtNode, cat CatalogReader, query string, paramTypes []types.Type) (Statement, error) {
	return bindWith(stmt, cat, query, nil, paramTypes)
}

func bindWith(stmt ast.StmtNode, cat CatalogReader, query string, sess *SessionInfo, paramTypes []types.Type) (Statement, error) {
	var facts *dialectFacts
	if d, ok := stmt.(*dialectStmt); ok {
		stmt, facts = d.StmtNode, d.facts
	}
	b := newBinder(stmt, cat, query, facts)
	b.paramTypes = paramTypes
	b.session = sess
	if sess != nil {
		b.now = sess.Now
	}
	st, err := b.bind(stmt)
	if err == nil {
		err = b.unusedFacts()
	}
	if err == nil && len(b.setConfigs) > 0 {
		q, ok := st.(*Query)
		if !ok {
			return nil, Errorf(ErrUnsupported, 0, "set_config() is supported in a SELECT only")
		}
		q.SetConfigs = b.setConfigs
	}
	return st, err
}

func (b *binder) bind(stmt ast.StmtNode) (Statement, error) {
	if st, ok, err := b.bindAuth(stmt); ok { // users and privileges: bind_auth.go
		return st, err
	}
	if st, ok, err := b.bindDeclare(stmt); ok { // transactions and cursors: tx.go
		return st, err
	}
	if st, ok, err := b.bindTransaction(stmt); ok {
		return st, err
	}
	switch s := stmt.(type) {
	case *ast.SelectStmt:
		if s.With != nil && s.With.IsRecursive {
			return b.bindRecursive(s)
		}
		p, err := b.bindQuery(s)
		if err != nil {
			return nil, err
		}
		return &Query{Plan: b.outputNames(p)}, nil
	case *ast.ExplainStmt:
		return b.bindExplain(s)
	case *ast.CreateTableStmt:
		return b.bindCreateTable(s)
	case *ast.DropTableStmt:
		return b.bindDropTable(s)
	case *ast.CreateViewStmt:
		return b.bindCreateView(s)
	case *ast.ShowStmt:
		return b.bindShow(s)
	case *ast.SetStmt:
		return b.bindSet(s)
	case *ast.InsertStmt:
		return b.bindInsert(s)
	case *ast.UpdateStmt:
		return b.bindUpdate(s)
	case *ast.DeleteStmt:
		return b.bindDelete(s)
	case *ast.TruncateTableStmt:
		return b.bindTruncate(s)
	case *ast.DoStmt:
		return b.bindSessionCommand(s) // or MySQL's DO, refused
	case *ast.DeallocateStmt:
		return &Deallocate{Name: strings.ToLower(s.Name)}, nil
	case *ast.KillStmt:
		return &Kill{JobID: strconv.FormatUint(s.ConnectionID, 10)}, nil
	case *ast.SetOprStmt:
		p, err := b.bindSetOpr(s)
		if err != nil {
			return nil, err
		}
		return &Query{Plan: b.outputNames(p)}, nil
	}
	return nil, b.errorf(ErrUnsupported, nil, "%s is not supported", statementName(stmt))
}

// statementName names a statement for "not supported" errors: its first words.
func statementName(stmt ast.StmtNode) string {
	words := strings.Fields(stmt.Text())
	if len(words) > 2 {
		words = words[:2]
	}
	if len(words) == 0 {
		return fmt.Sprintf("%T", stmt)
	}
	return strings.ToUpper(strings.TrimRight(strings.Join(words, " "), ";"))
}

// binder holds what binding one statement needs to know beyond the AST.
type binder struct {
	cat CatalogReader
	// rowIDFor names the stored table whose next scan the FROM binds has
	// its row-id column (withRowID): UPDATE's and DELETE's.
	rowIDFor string
	query    string
	// start and text locate the statement inside query (byte offsets).
	start int
	text  string
	// refs remembers, for each column reference the binder creates, where it was
	// written and its qualified name, for errors found after binding (a column
	// that is neither grouped nor aggregated).
	refs map[*expr.Expr]colRef
	// depth is how deep bindExpr is in the expression it binds.
	depth int
	// chars converts offsets in query to positions (pos).
	chars *charIndex
	// ctes are the WITH queries in scope, innermost last (bind_with.go).
	ctes []*cte
	// outer are the scopes of the queries enclosing the subquery being bound
	// (bind_subquery.go), innermost last; pendingCorr is the correlation the
	// next SELECT's FROM takes (bind_correlated.go).
	outer       []*scope
	pendingCorr *correlation
	// setCorr is the correlation the next set operation's SELECTs take.
	setCorr *setCorrelation
	// corrFrom is the correlation whose subquery's FROM is being bound, and
	// laterals its set-returning items that read the enclosing query
	// (bind_lateral.go).
	corrFrom *correlation
	laterals []lateralSeries
	// corrTables are the derived tables of corrFrom's FROM that read the
	// enclosing query (bindOuterDerived).
	corrTables []*fromNode
	// lateralCond is the join condition lateralDomain adds (its series row
	// is a real one).
	lateralCond *expr.Expr
	// facts are what the dialect layer took out of the query's text for the
	// binder (NULLS FIRST ...); used marks those it has applied.
	facts *dialectFacts
	used  map[int]bool
	// paramTypes are the parameters' declared types (BindParams).
	paramTypes []types.Type
	// now is the statement's time, for NOW() (bind_datetime.go).
	now time.Time
	// session is the client's session the statement runs in, nil for none
	// (bind_session.go); setConfigs are the set_config calls bound.
	session    *SessionInfo
	setConfigs []SetConfig
}

type colRef struct {
	pos  int // character position, 0 if unknown
	name string
}

func newBinder(stmt ast.StmtNode, cat CatalogReader, query string, facts *dialectFacts) *binder {
	b := &binder{cat: cat, query: query, refs: make(map[*expr.Expr]colRef), facts: facts}
	b.start = stmt.OriginTextPosition()
	b.text = stmt.Text()
	if b.start < 0 || b.start+len(b.text) > len(query) || query[b.start:b.start+len(b.text)] != b.text {
		b.start = max(strings.Index(query, b.text), 0)
	}
	b.numberParams(stmt)
	return b
}

// numberParams numbers the ? markers of a statement 0, 1, ... in text order (the
// parser leaves them all at 0); a marker binds as parameter Order+1. Markers
// the dialect layer made for a $n are not counted: they bind as that $n
// (markerParam).
func (b *binder) numberParams(stmt ast.StmtNode) {
	v := &paramCollector{}
	stmt.Accept(v)
	sort.Slice(v.params, func(i, j int) bool { return v.params[i].Offset < v.params[j].Offset })
	i := 0
	for _, p := range v.params {
		if _, ok := b.dollarParam(p); !ok {
			p.SetOrder(i)
			i++
		}
	}
}

// param is the expression of parameter $n: of its declared type, else of the
// null type, for the operator or cast around it to give it one.
func (b *binder) param(n int) *expr.Expr {
	t := types.NullType
	if n <= len(b.paramTypes) {
		t = b.paramTypes[n-1]
	}
	return &expr.Expr{Kind: expr.KindParam, Param: n, Type: t}
}

// markerParam is the number of the parameter a ? marker stands for.
func (b *binder) markerParam(p *test_driver.ParamMarkerExpr) int {
	if n, ok := b.dollarParam(p); ok {
		return n
	}
	return p.Order + 1
}

// dollarParam is the $n a marker the dialect layer made stands for.
func (b *binder) dollarParam(p *test_driver.ParamMarkerExpr) (int, bool) {
	if b.facts.empty() {
		return 0, false
	}
	n, ok := b.facts.params[p.Offset]
	return n, ok
}

type paramCollector struct {
	params []*test_driver.ParamMarkerExpr
}

func (v *paramCollector) Enter(n ast.Node) (ast.Node, bool) {
	if p, ok := n.(*test_driver.ParamMarkerExpr); ok {
		v.params = append(v.params, p)
	}
	return n, false
}

func (v *paramCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// errorf returns an *Error positioned at node (nil or an unpositioned node: no
// position).
func (b *binder) errorf(kind error, node ast.Node, format string, args ...any) *Error {
	return Errorf(kind, b.pos(node), format, args...)
}

// pos is the character position of an expression node, 0 when the parser did not
// record one (it records positions for expressions only).
func (b *binder) pos(node ast.Node) int {
	if node == nil {
		return 0
	}
	off := node.OriginTextPosition()
	if off <= 0 || off > len(b.query) {
		return 0
	}
	if b.chars == nil {
		b.chars = newCharIndex(b.query)
	}
	return b.chars.pos(off)
}

// identPos finds where identifier name is written in the statement, for nodes
// the parser gives no position (table names). It prefers an occurrence right
// after one of the words in after (FROM, JOIN, ...), else takes the first; it
// skips string literals and comments. 0 when not found.
func (b *binder) identPos(name string, after ...string) int {
	type tok struct {
		text string
		off  int
	}
	var toks []tok
	s := b.text
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'':
			j := i + 1
			for j < len(s) {
				if s[j] == '\\' || s[j] == '\'' && j+1 < len(s) && s[j+1] == '\'' {
					j += 2
					continue
				}
				if s[j] == '\'' {
					break
				}
				j++
			}
			i = j + 1
		case c == '-' && strings.HasPrefix(s[i:], "--"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			if j := strings.Index(s[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(s)
			}
		case c == '"' || c == '`':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				j = len(s) - i - 1
			}
			toks = append(toks, tok{s[i+1 : i+1+j], i})
			i += j + 2
		case isIdentRune(rune(c)) || c >= utf8.RuneSelf:
			j := i
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if !isIdentRune(r) {
					break
				}
				j += n
			}
			if j == i {
				j++
			}
			toks = append(toks, tok{s[i:j], i})
			i = j
		case c == ',' || c == '(':
			toks = append(toks, tok{string(c), i})
			i++
		default:
			i++
		}
	}
	first := -1
	for k, t := range toks {
		if !strings.EqualFold(t.text, name) {
			continue
		}
		if first < 0 {
			first = t.off
		}
		if k > 0 {
			for _, a := range after {
				if strings.EqualFold(toks[k-1].text, a) {
					return charPos(b.query, b.start+t.off)
				}
			}
		}
	}
	if first < 0 {
		return 0
	}
	return charPos(b.query, b.start+first)
}

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// tableAfter are the words a table name follows in the statements Bind reads.
var tableAfter = []string{"from", "join", ",", "table", "view", "exists", "desc", "describe", "columns", "fields", "in"}

// column is one column visible to expressions, as a scope lists it.
type column struct {
	table string // qualifier: the alias or table name, exact; "" if none
	name  string // exact: folded unless it was written quoted
	typ   types.Type
	idx   int // position in the input expressions are bound against
	// hidden columns are reachable only with a qualifier and are left out of *:
	// the second column of a JOIN ... USING pair.
	hidden bool
	// outer columns are an enclosing query's, read by a correlated subquery
	// (bind_correlated.go): a name finds them only when no column of the
	// subquery's own has it.
	outer bool
}

// scope is the set of columns an expression may name.
type scope struct {
	cols []column
	// star lists, by position in cols, what SELECT * expands to (USING puts the
	// merged columns first, as PostgreSQL does).
	star []int
	// corr is set in the scope of a correlated subquery (bind_correlated.go);
	// countRows is what its COUNT(*) counts, a column NULL on the domain rows
	// nothing matched.
	corr      *correlation
	countRows *expr.Expr
	// tableOIDs are the oids of the tables read, by their qualifier: what
	// PostgreSQL's system column tableoid reads (psql's \dd and \dL join
	// pg_description on it).
	tableOIDs map[string]int64
}

// tableOID returns the oid of the table qualified by table, or of the one
// table in scope when table is "".
func (s *scope) tableOID(table string) (int64, bool) {
	if table == "" && len(s.tableOIDs) == 1 {
		for _, oid := range s.tableOIDs {
			return oid, true
		}
	}
	oid, ok := s.tableOIDs[table]
	return oid, ok
}

func (c column) qualified() string {
	if c.table == "" {
		return c.name
	}
	return c.table + "." + c.name
}

// lookup finds the columns called name, qualified by table unless table is "".
func (s *scope) lookup(table, name string) []int {
	var found []int
	for _, outer := range []bool{false, true} {
		for i, c := range s.cols {
			if c.name != name || c.outer != outer {
				continue
			}
			if table == "" && !c.hidden || table != "" && c.table == table {
				found = append(found, i)
			}
		}
		if len(found) > 0 {
			break
		}
	}
	return found
}

// hasTable reports whether some column is qualified by table.
func (s *scope) hasTable(table string) bool {
	for _, c := range s.cols {
		if c.table == table {
			return true
		}
	}
	return false
}

// schemaScope makes the scope of a plan's output, every column qualified by table
// and numbered from off.
func schemaScope(schema types.Schema, table string, off int) *scope {
	s := &scope{}
	for i, f := range schema {
		s.cols = append(s.cols, column{table: table, name: f.Name, typ: f.Type, idx: off + i})
		s.star = append(s.star, i)
	}
	return s
}
