package sql

import (
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// The dialect layer: the TiDB parser reads MySQL's grammar, and users and
// their clients write PostgreSQL's and Flink's. Where they write a form the
// parser cannot read, this layer, in front of it, rewrites the statement's
// tokens (dialect_lex.go; never regular expressions over the raw text) into a
// form it reads. Every rewrite is listed below, in the order they run, with
// what users write and what the parser is given; dialect_test.go tests each.
//
// After the rewrites, foldIdentifiers folds every unquoted word to lower case,
// as PostgreSQL folds unquoted identifiers (keywords read the same in any
// case), so that the parser's names (model.CIStr's O) are exact: "Users" and
// "Id" as written, users for Users and for `Users`. The binder and the
// catalog compare names exactly.
//
// Positions stay the user's: every token keeps where it came from in the
// user's text (a token a rewrite made up, where the text it stands for
// starts), Parse maps the offsets of the parsed statements' nodes back
// through them, and a syntax error points at the user's own token.
var dialectRewrites = []dialectRewrite{
	{
		name:  "DECLARE, FETCH, MOVE, CLOSE",
		users: "DECLARE c NO SCROLL CURSOR WITH HOLD FOR SELECT ...; FETCH FORWARD 2 FROM c; MOVE ALL IN c; CLOSE c",
		reads: "SELECT ... (the binder is told: a cursor c's query); DO 0 (the binder is told the FETCH, MOVE or CLOSE)",
		apply: rewriteCursor,
	},
	{
		name:  "transaction statements",
		users: "BEGIN WORK; BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY; END; ABORT; RELEASE s; ROLLBACK TRANSACTION TO s; SAVEPOINT S",
		reads: "START TRANSACTION; START TRANSACTION READ ONLY; COMMIT; ROLLBACK; RELEASE SAVEPOINT \"s\"; ROLLBACK TO \"s\"; SAVEPOINT \"s\" (names folded as PostgreSQL folds them)",
		apply: rewriteTransaction,
	},
	{
		name:  "session commands",
		users: "SET search_path TO a, b; SET TIME ZONE 'Europe/Paris'; SET LOCAL x = 1; RESET x; RESET ALL; DISCARD ALL; DEALLOCATE [PREPARE] name | ALL",
		reads: "DO 0 (the binder is told the command: dialect_session.go)",
		apply: rewriteSessionCommand,
	},
	{
		name:  "MATERIALIZED VIEW",
		users: "CREATE MATERIALIZED VIEW v AS ...; DROP MATERIALIZED VIEW v",
		reads: "CREATE VIEW v AS ...; DROP VIEW v (every Hummer view is materialised)",
		apply: rewriteMaterialized,
	},
	{
		name:  "INTERVAL 'n unit'",
		users: "ts - INTERVAL '1 day'; RANGE BETWEEN INTERVAL '3 hours' PRECEDING AND CURRENT ROW",
		reads: "ts - INTERVAL '1' DAY; RANGE BETWEEN INTERVAL '3' HOUR PRECEDING AND CURRENT ROW",
		apply: rewriteIntervalLiterals,
	},
	{
		name:  "WATERMARK FOR",
		users: "CREATE TABLE bid (..., date_time TIMESTAMP, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) ...",
		reads: "CREATE TABLE bid (..., date_time TIMESTAMP, CONSTRAINT `$watermark for date_time` CHECK (date_time - INTERVAL '4' SECOND)) ... (the binder makes it the table's watermark: dialect_watermark.go)",
		apply: rewriteWatermark,
	},
	{
		name:  "SHOW name",
		users: "SHOW work_mem; SHOW TIME ZONE; SHOW TRANSACTION ISOLATION LEVEL; SHOW myapp.tenant; SHOW ALL",
		reads: "SHOW VARIABLES LIKE 'work_mem'; ... LIKE 'timezone'; ... LIKE 'transaction_isolation'; ... LIKE 'myapp.tenant'; SHOW VARIABLES",
		apply: rewriteShowName,
	},
	{
		name:  "PASSWORD",
		users: "ALTER USER ann PASSWORD 'SCRAM-SHA-256$4096:...'; CREATE ROLE bob WITH LOGIN PASSWORD 'pw'",
		reads: "ALTER USER ann IDENTIFIED BY 'SCRAM-SHA-256$4096:...'; CREATE USER bob IDENTIFIED BY 'pw' (a verifier is kept as it is)",
		apply: rewriteRolePassword,
	},
	{
		name:  "E'...' strings",
		users: "E'a\\nb', E'it\\'s', $$it's$$, $q$a$$b$q$",
		reads: "'a<newline>b', 'it''s', 'it''s', 'a$$b' (the parser reads strings without backslash escapes, as PostgreSQL's standard strings)",
		apply: rewriteEscapeStrings,
	},
	{
		name:  "OPERATOR(schema.op)",
		users: "c.relname OPERATOR(pg_catalog.~) '^(docs)$'",
		reads: "c.relname ~ '^(docs)$'",
		apply: rewriteOperatorSyntax,
	},
	{
		name:  "~, !~, ~*, !~*",
		users: "name ~ '^pg_', name !~ '^pg_', name ~* 'DOC'",
		reads: "name REGEXP '^pg_', name NOT REGEXP '^pg_', name REGEXP CONCAT('(?i)', 'DOC') (REGEXP bound as PostgreSQL's ~)",
		apply: rewriteRegexMatch,
	},
	{
		name:  "COLLATE PostgreSQL collations",
		users: "relname COLLATE pg_catalog.default, name COLLATE \"C\"",
		reads: "relname, name (text compares by bytes)",
		apply: rewriteCollate,
	},
	{
		name:  "qualified and array type names",
		users: "x::pg_catalog.text, CAST(x AS pg_catalog.int4), x::int2[], x::\"char\"",
		reads: "x::text, CAST(x AS int4), x::text, x::text (arrays are held as their text form)",
		apply: rewriteQualifiedTypes,
	},
	{
		name:  "x[i]",
		users: "prattrs[s], (a)[1]",
		reads: "array_get(prattrs, s), array_get((a), 1) (the element of the array's text form)",
		apply: rewriteSubscripts,
	},
	{
		name:  "(x).field",
		users: "(information_schema._pg_expandarray(i.indkey)).n, (result.keys).x (pgjdbc's getPrimaryKeys, getIndexInfo)",
		reads: "record_field((information_schema._pg_expandarray(i.indkey)), 'n'), record_field((result.keys), 'x')",
		apply: rewriteFieldSelection,
	},
	{
		name:  "MySQL's reserved words as names",
		users: "information_schema._pg_expandarray(i.indkey) AS KEYS, result.KEYS",
		reads: "... AS \"keys\", result.\"keys\" (KEYS, KEY, INDEX, RANGE after AS or a table's dot)",
		apply: rewriteReservedNames,
	},
	{
		name:  "<> ALL (array)",
		users: "word <> ALL ('{a,abs}'::text[]) (pgjdbc's getSQLKeywords)",
		reads: "(array_position('{a,abs}'::text[], word) IS NULL)",
		apply: rewriteAllArrayValue,
	},
	{
		name:  "FROM pg_get_keywords()",
		users: "FROM pg_catalog.pg_get_keywords()",
		reads: "FROM pg_catalog.pg_get_keywords (a system table of the function's rows)",
		apply: rewriteTableFunctions,
	},
	{
		name:  "generate_series in FROM",
		users: "FROM generate_series(1, 3) AS s, t; FROM pg_catalog.generate_series(0, n) s (k); FROM unnest(a) x",
		reads: "FROM (SELECT generate_series(1, 3) AS s) AS s, t; FROM (SELECT generate_series(0, n) AS k) AS s; FROM (SELECT unnest(a) AS x) AS x",
		apply: rewriteSeriesFrom,
	},
	{
		name:  "ARRAY(subquery)",
		users: "ARRAY(SELECT rolname FROM pg_roles WHERE ... ORDER BY 1)",
		reads: "COALESCE((SELECT array_agg_nonnull(rolname ORDER BY rolname) FROM pg_roles WHERE ...), '{}') (array_agg without NULLs)",
		apply: rewriteArraySubquery,
	},
	{
		name:  "= ANY (ARRAY[...])",
		users: "relkind = ANY (ARRAY['r', 'p']), x <> ALL (ARRAY[1, 2]); oid = ANY (pol.polroles)",
		reads: "relkind IN ('r', 'p'), x NOT IN (1, 2); (array_position(pol.polroles, oid) IS NOT NULL)",
		apply: rewriteAnyArray,
	},
	{
		name:  "ARRAY[...]",
		users: "ARRAY['r', 'v'], ARRAY[]",
		reads: "array_build('r', 'v'), '{}' (the text form of the array: {r,v})",
		apply: rewriteArrayLiteral,
	},
	{
		name:  "window functions",
		users: "GROUP BY TUMBLE(ts, INTERVAL '10' SECOND) with TUMBLE_START(ts, INTERVAL '10' SECOND) (and SESSION, HOP); FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND)) (and HOP, CUMULATE)",
		reads: "GROUP BY tumble_start(ts, 10000000), tumble_end(ts, 10000000) with tumble_start(ts, 10000000); FROM (SELECT *, tumble_start(ts, 10000000) AS window_start, tumble_end(ts, 10000000) AS window_end FROM bid) AS bid (dialect_window.go)",
		apply: rewriteWindows,
	},
	{
		name:  "PostgreSQL column types",
		users: "CREATE TABLE t (ts timestamptz, at timestamp with time zone, b bytea, i interval, o oid, r real, f float, v varchar)",
		reads: "CREATE TABLE t (ts DATETIME, at DATETIME, b TEXT, i TEXT, o BIGINT, r FLOAT, f DOUBLE, v TEXT) (the binder is told each column's type)",
		apply: rewriteColumnTypes,
	},
	{
		name:  "interval 'text'",
		users: "interval '1 day 02:00', now() - INTERVAL '2 hours' (PostgreSQL's interval literals: no unit after the text); timestamptz '...', timestamp with time zone '...', bytea '...'",
		reads: "CAST('1 day 02:00' AS interval), now() - CAST('2 hours' AS interval); INTERVAL '3' DAY stays MySQL's; CAST('...' AS timestamptz), CAST('...' AS bytea)",
		apply: rewriteIntervalLiteral,
	},
	{
		name:  "x::type",
		users: "price::numeric(10,2), '2024-01-02'::date, (a + b)::text",
		reads: "CAST(price AS numeric(10,2)), CAST('2024-01-02' AS date), CAST((a + b) AS text)",
		apply: rewriteColonCast,
	},
	{
		name:  "AT TIME ZONE",
		users: "ts AT TIME ZONE 'Europe/Paris', TIMESTAMP '2024-01-01 12:00' AT TIME ZONE 'UTC', x::timestamptz AT TIME ZONE $1",
		reads: "timezone('Europe/Paris', ts), timezone('UTC', TIMESTAMP '2024-01-01 12:00'), timezone($1, CAST(x AS timestamptz)) (bind_timezone.go)",
		apply: rewriteAtTimeZone,
	},
	{
		name:  "CAST AS SQL type names",
		users: "CAST(x AS TEXT), CAST(x AS VARCHAR(20)), CAST(x AS INTEGER), CAST(x AS DOUBLE PRECISION)",
		reads: "CAST(x AS CHAR), CAST(x AS CHAR(20)), CAST(x AS SIGNED), CAST(x AS DOUBLE); CAST(x AS regclass) is regclass(x), CAST(x AS boolean) bool(x), CAST(x AS timestamptz) timestamptz(x), CAST(x AS bytea) bytea(x), CAST(x AS interval) \"interval\"(x), PostgreSQL's function-style casts; CAST(x AS numeric) without a precision \"numeric\"(x), which keeps x's scale (the binder is told each cast's PostgreSQL type name, which names its column)",
		apply: rewriteCastTypes,
	},
	{
		name:  "DISTINCT ON (...)",
		users: "SELECT DISTINCT ON (dept) name, pay FROM emp ORDER BY dept, pay DESC",
		reads: "SELECT name, pay, ROW_NUMBER() OVER (PARTITION BY dept ORDER BY dept, pay DESC) AS \"$distinct_on\" FROM emp ORDER BY dept, pay DESC (the binder keeps the rows numbered 1)",
		apply: rewriteDistinctOn,
	},
	{
		name:  "EXTRACT(PostgreSQL field FROM x)",
		users: "EXTRACT(DOW FROM d), EXTRACT(EPOCH FROM ts)",
		reads: "date_part('dow', d), date_part('epoch', ts) (MySQL's EXTRACT knows no such fields)",
		apply: rewriteExtractFields,
	},
	{
		name:  "VALUES lists",
		users: "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t (n, s); VALUES (1), (2)",
		reads: "SELECT * FROM (SELECT 1 AS n, 'a' AS s UNION ALL SELECT 2, 'b') AS t; SELECT 1 AS column1 UNION ALL SELECT 2",
		apply: rewriteValuesLists,
	},
	{
		name:  "derived table column lists",
		users: "SELECT * FROM (SELECT k, count(*) FROM t GROUP BY k) AS c (key, n)",
		reads: "SELECT * FROM (SELECT k AS key, count(*) AS n FROM t GROUP BY k) AS c",
		apply: rewriteDerivedColumns,
	},
	{
		name:  "GROUPING SETS, ROLLUP, CUBE",
		users: "GROUP BY ROLLUP (region, city); GROUP BY CUBE (a, b); GROUP BY GROUPING SETS ((a, b), (a), ())",
		reads: "GROUP BY region, city (the binder is told the sets: (region, city), (region), ())",
		apply: rewriteGroupingSets,
	},
	{
		name:  "FULL [OUTER] JOIN",
		users: "a FULL JOIN b ON a.k = b.k; a FULL JOIN b USING (k); a NATURAL FULL JOIN b",
		reads: "a LEFT JOIN b ON a.k = b.k (the binder is told: FULL); a LEFT JOIN b ON TRUE (told: FULL, USING (k)); a LEFT JOIN b ON TRUE (told: FULL, NATURAL)",
		apply: rewriteFullJoin,
	},
	{
		name:  "FOR SYSTEM_TIME AS OF",
		users: "FROM bid AS b JOIN side_input FOR SYSTEM_TIME AS OF b.p_time AS s ON b.k = s.key (Flink's processing-time lookup join)",
		reads: "FROM bid AS b JOIN side_input AS s ON b.k = s.key (the table is read whole, then the stream probes it: dialect_temporal.go)",
		apply: rewriteTemporalJoin,
	},
	{
		name:  "NULLS FIRST|LAST",
		users: "ORDER BY score DESC NULLS LAST; ORDER BY 2 NULLS FIRST",
		reads: "ORDER BY score DESC (the binder is told: NULLS LAST); ORDER BY (2) (told: NULLS FIRST; the parser keeps the offset of (2), not of a position 2)",
		apply: rewriteNullsOrder,
	},
	{
		name:  "FILTER (WHERE ...)",
		users: "COUNT(*) FILTER (WHERE ok), SUM(x) FILTER (WHERE y > 0)",
		reads: "COUNT(CASE WHEN ok THEN 1 END), SUM(CASE WHEN y > 0 THEN x END)",
		apply: rewriteAggFilter,
	},
	{
		name:  "string_agg",
		users: "string_agg(name, ', ' ORDER BY name)",
		reads: "GROUP_CONCAT(name ORDER BY name SEPARATOR ', ')",
		apply: rewriteStringAgg,
	},
	{
		name:  "array_agg",
		users: "array_agg(name ORDER BY name)",
		reads: "('{' || GROUP_CONCAT(COALESCE(array_element(name), 'NULL') ORDER BY name SEPARATOR ',') || '}') (arrays are held as their text form)",
		apply: rewriteArrayAgg,
	},
	{
		name:  "LIMIT, OFFSET, FETCH FIRST",
		users: "LIMIT $1 OFFSET $2; OFFSET 5; LIMIT ALL OFFSET 5; OFFSET 5 LIMIT 10; OFFSET 5 ROWS FETCH NEXT $1 ROWS ONLY",
		reads: "LIMIT ? OFFSET ? (the binder is told: ? is $1, $2); LIMIT 18446744073709551615 OFFSET 5 (no limit); ...; LIMIT 10 OFFSET 5; LIMIT ? OFFSET 5",
		apply: rewriteLimit,
	},
	{
		name:  "IS [NOT] DISTINCT FROM",
		users: "a IS DISTINCT FROM b; a IS NOT DISTINCT FROM b",
		reads: "a <=> b IS FALSE; a <=> b (<=> is MySQL's NULL-safe equality)",
		apply: rewriteDistinctFrom,
	},
	{
		name:  "keywords as labels",
		users: "SELECT (SELECT ...) AS DEFAULT, cons.conkey AS key FROM t",
		reads: "SELECT (SELECT ...) AS \"default\", cons.conkey AS \"key\" FROM t (PostgreSQL takes any keyword after AS; the parser, a quoted name)",
		apply: rewriteKeywordLabels,
	},
	{
		name:  "substring(s FOR n)",
		users: "substring(pg_get_expr(d.adbin, d.adrelid, true) for 128)",
		reads: "substring(pg_get_expr(d.adbin, d.adrelid, true) FROM 1 for 128)",
		apply: rewriteSubstringFor,
	},
}

// dialectRewrite is one rewrite: apply returns a statement's tokens
// rewritten (or the same tokens when the form is not there).
type dialectRewrite struct {
	name, users, reads string
	apply              func(stmt []token, f *dialectFacts) []token
}

// dialectFacts carry what rewrites took out of the text for the binder: keyed
// by the offset in the user's text of the expression they belong to.
type dialectFacts struct {
	// nullsFirst: an ORDER BY item's NULLS FIRST (true) or NULLS LAST.
	nullsFirst map[int]bool
	// groupingSets: a GROUP BY's grouping sets, by the offset of its first
	// item (dialect_grouping.go).
	groupingSets map[int]groupingSets
	// fullJoin: a FULL JOIN, written as LEFT JOIN for the parser, by the
	// offset of its ON condition.
	fullJoin map[int]bool
	// joinUsing: the USING columns (or NATURAL) of a FULL JOIN written
	// LEFT JOIN ... ON TRUE, by the offset of that TRUE.
	joinUsing map[int]joinUsing
	// params: the $n a ? marker stands for, by the offset of the $n
	// (dialect_limit.go).
	params map[int]int
	// declares: a DECLARE ... CURSOR FOR query, by the offset of its query,
	// which is all the parser reads of it; cursors: a FETCH, MOVE or CLOSE,
	// written as DO 0, by the offset of the statement (dialect_tx.go).
	declares map[int]*DeclareCursor
	cursors  map[int]cursorFact
	// session: a session command the dialect layer read itself, by the
	// offset of the statement's first word (dialect_session.go).
	session map[int]*sessionCommand
	// columnTypes: a CREATE TABLE column of a PostgreSQL type Hummer holds
	// as one of its own (timestamptz, bytea, interval), written as the type
	// holding it, by the offset of its name (dialect_pg.go).
	columnTypes map[int]columnType
	// castNames: the name PostgreSQL gives a select item that is a cast
	// (its type's name in pg_type: int4 for ::integer), by the offset of
	// the CAST (dialect_rewrites.go's rewriteCastTypes).
	castNames map[int]string
}

func (f *dialectFacts) empty() bool {
	return f == nil || len(f.nullsFirst) == 0 && len(f.fullJoin) == 0 && len(f.groupingSets) == 0 && len(f.params) == 0 &&
		len(f.declares) == 0 && len(f.cursors) == 0 && len(f.session) == 0 && len(f.columnTypes) == 0 && len(f.castNames) == 0
}

// dialected is SQL text as the dialect layer rewrote it.
type dialected struct {
	text   string  // what the parser reads
	toks   []token // its tokens
	starts []int   // where each token starts in text
	facts  *dialectFacts
}

// rewriteDialect runs every rewrite over each statement of sql.
func rewriteDialect(sql string) *dialected {
	toks := lex(sql)
	var out []token
	facts := &dialectFacts{nullsFirst: map[int]bool{}, fullJoin: map[int]bool{}, joinUsing: map[int]joinUsing{}, groupingSets: map[int]groupingSets{},
		params: map[int]int{}, declares: map[int]*DeclareCursor{}, cursors: map[int]cursorFact{},
		session: map[int]*sessionCommand{}, columnTypes: map[int]columnType{}, castNames: map[int]string{}}
	for len(toks) > 0 {
		end := statementEnd(toks)
		stmt := toks[:end]
		for _, r := range dialectRewrites {
			stmt = r.apply(stmt, facts)
		}
		out = append(out, stmt...)
		toks = toks[end:]
	}
	d := &dialected{toks: out, starts: make([]int, len(out)), facts: facts}
	var b strings.Builder
	for i, t := range out {
		d.starts[i] = b.Len()
		b.WriteString(t.text)
	}
	d.text = b.String()
	return d
}

// foldIdentifiers lower-cases the ASCII letters of every word of d (its
// unquoted identifiers and keywords), as PostgreSQL's downcase_identifier
// does: a quoted identifier keeps its case. A backquoted one (`dateTime`,
// MySQL's and Flink's quoting, which PostgreSQL has not) is folded too, as
// MySQL compares column names without case: the Nexmark queries quote
// `dateTime` for a column their DDL names unquoted. Lengths do not change, so
// offsets in d.text stay where they were.
func foldIdentifiers(d *dialected) {
	var b strings.Builder
	changed := false
	for i, t := range d.toks {
		if (t.kind == tokWord || t.kind == tokIdent && strings.HasPrefix(t.text, "`")) && hasUpperASCII(t.text) {
			d.toks[i].text = lowerASCII(t.text)
			changed = true
		}
		b.WriteString(d.toks[i].text)
	}
	if changed {
		d.text = b.String()
	}
}

func hasUpperASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// lowerASCII is s with A-Z lower-cased and every other byte kept.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// statementEnd returns the length of the first statement of toks, its ';'
// included: the first ';' outside parentheses.
func statementEnd(toks []token) int {
	depth := 0
	for i, t := range toks {
		if t.kind != tokPunct {
			continue
		}
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		case ";":
			if depth <= 0 {
				return i + 1
			}
		}
	}
	return len(toks)
}

// origin maps an offset in the rewritten text to one in the user's: inside a
// token copied from it, the same place in that token; inside one a rewrite
// made, where the text it stands for starts.
func (d *dialected) origin(off int) int {
	if len(d.toks) == 0 {
		return off
	}
	i := sort.Search(len(d.starts), func(i int) bool { return d.starts[i] > off }) - 1
	if i < 0 {
		return 0
	}
	t := d.toks[i]
	if t.made {
		if t.end > t.pos && off-d.starts[i] >= len(t.text) {
			return t.end // the end of a statement a rewrite replaced whole
		}
		return t.pos
	}
	return t.pos + min(off-d.starts[i], len(t.text))
}

// originEnd maps the offset where a statement ends in the rewritten text to
// the user's: past the end of a made token that knows the end of the text it
// stands for, that end, else origin's.
func (d *dialected) originEnd(off int) int {
	i := sort.Search(len(d.starts), func(i int) bool { return d.starts[i] >= off }) - 1
	if i >= 0 && d.toks[i].made && d.toks[i].end > 0 && off == d.starts[i]+len(d.toks[i].text) {
		return d.toks[i].end
	}
	return d.origin(off)
}

// identity reports whether no rewrite changed anything.
func (d *dialected) identity(sql string) bool { return d.text == sql }

// words returns the indexes of stmt's tokens that are not blanks.
func words(stmt []token) []int {
	var idx []int
	for i, t := range stmt {
		if t.kind != tokSpace {
			idx = append(idx, i)
		}
	}
	return idx
}

// made returns the tokens of text, marked as made by a rewrite for the user's
// text at pos.
func made(pos int, text string) []token {
	toks := lex(text)
	for i := range toks {
		toks[i].pos, toks[i].made = pos, true
	}
	return toks
}

// madeFor is made, for the user's text from pos to end that the tokens
// replace.
func madeFor(pos, end int, text string) []token {
	toks := made(pos, text)
	for i := range toks {
		toks[i].end = end
	}
	return toks
}

// splice returns stmt with toks[i:j] replaced by with.
func splice(stmt []token, i, j int, with ...token) []token {
	out := make([]token, 0, len(stmt)-(j-i)+len(with))
	out = append(out, stmt[:i]...)
	out = append(out, with...)
	return append(out, stmt[j:]...)
}

// COPY statements are not rewritten: the parser cannot read them, and the
// wire server runs them itself. ParseCopy (dialect_copy.go) is the dialect
// layer's pre-pass for them, reading tokens as the rewrites do:
//
//	COPY t [(a, b)] FROM STDIN [[WITH] (FORMAT csv, HEADER, ...) | CSV HEADER ...]
//	COPY t [(a, b)] TO STDOUT [options]
//	COPY (SELECT ...) TO STDOUT [options]
//
// with PostgreSQL's options in both its syntaxes (dialect_copy_options.go).

// dialectStmt is a parsed statement with the facts the dialect layer took out
// of the query's text, for Bind.
type dialectStmt struct {
	ast.StmtNode
	facts *dialectFacts
}

// nullsOrder returns the NULLS FIRST (true) or NULLS LAST written after the
// ORDER BY item e, if one was.
func (b *binder) nullsOrder(e ast.ExprNode) (first, ok bool) {
	if b.facts.empty() {
		return false, false
	}
	off := e.OriginTextPosition()
	first, ok = b.facts.nullsFirst[off]
	if ok {
		if b.used == nil {
			b.used = map[int]bool{}
		}
		b.used[off] = true
	}
	return first, ok
}

// aliasName is the name of an output column given as alias: as the parser
// read it, folded already unless it was written quoted (foldIdentifiers).
func (b *binder) aliasName(alias string) string { return alias }

// fullJoin reports whether the join whose ON condition is on was written
// FULL JOIN.
func (b *binder) fullJoin(on ast.ExprNode) bool {
	if b.facts.empty() {
		return false
	}
	off := on.OriginTextPosition()
	if !b.facts.fullJoin[off] {
		return false
	}
	if b.used == nil {
		b.used = map[int]bool{}
	}
	b.used[off] = true
	return true
}

// unusedFacts refuses the statement if a fact about its text was not
// applied (NULLS FIRST after an item the binder found no offset for), rather
// than ignore it.
func (b *binder) unusedFacts() error {
	if b.facts.empty() {
		return nil
	}
	for off := range b.facts.fullJoin {
		if off >= b.start && off < b.start+len(b.text) && !b.used[off] {
			return Errorf(ErrUnsupported, charPos(b.query, off), "this form of FULL JOIN is not supported")
		}
	}
	for off := range b.facts.groupingSets {
		if off >= b.start && off < b.start+len(b.text) && !b.used[off] {
			return Errorf(ErrUnsupported, charPos(b.query, off), "this form of grouping sets is not supported")
		}
	}
	for off := range b.facts.declares {
		if off >= b.start && off < b.start+len(b.text) && !b.used[off] {
			return Errorf(ErrSyntax, charPos(b.query, off), "DECLARE CURSOR takes a SELECT")
		}
	}
	for off := range b.facts.nullsFirst {
		if off >= b.start && off < b.start+len(b.text) && !b.used[off] {
			return Errorf(ErrUnsupported, charPos(b.query, off), "NULLS FIRST and NULLS LAST are not supported here")
		}
	}
	return nil
}
