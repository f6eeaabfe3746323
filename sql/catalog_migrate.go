package sql

import "strings"

// migrateCatalog brings what an older engine saved (f.Version) to
// catalogVersion, in memory; the next save writes it so.
//
// Version 0 to 1: a view's query is bound again at every start. Before
// version 1 a quoted identifier was folded to lower case like any other,
// so every name in an old catalog is lower case and an old view may quote
// a mixed-case spelling of one ("Name" for the column name). Such a query
// is kept with its quoted identifiers lower-cased as they were then read:
// it binds as it did when it was created. Nothing else in the text
// changes (strings keep their case).
func migrateCatalog(f *catalogJSON) {
	if f.Version < 1 {
		for _, t := range f.Tables {
			if t.Query != "" {
				t.Query = foldQuotedIdentifiers(t.Query)
			}
		}
	}
}

// foldQuotedIdentifiers returns query with every double-quoted identifier
// lower-cased, as the TiDB parser's names folded them (strings.ToLower).
func foldQuotedIdentifiers(query string) string {
	var b strings.Builder
	for _, t := range lex(query) {
		if t.kind == tokIdent && strings.HasPrefix(t.text, `"`) {
			b.WriteString(strings.ToLower(t.text))
			continue
		}
		b.WriteString(t.text)
	}
	return b.String()
}
