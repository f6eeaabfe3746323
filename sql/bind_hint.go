package sql

import "fmt"

// The HINT of a column that does not exist, as PostgreSQL's
// errorMissingColumn gives it (parse_relation.c): the column of the scope
// nearest the name written, by Levenshtein distance, if the distance is at
// most half the name's length and at most 3, and one or two columns are
// that near. "id" for "Id" and "NAME" for "Name" are what quoted names make
// common.

// maxFuzzyDistance is PostgreSQL's MAX_FUZZY_DISTANCE.
const maxFuzzyDistance = 3

// hintColumn sets err's hint to the columns of s nearest name (of table
// table, if one is given), and returns err.
func (s *scope) hintColumn(err *Error, table, name string) *Error {
	best := maxFuzzyDistance + 1
	var first, second *column
	for i := range s.cols {
		c := &s.cols[i]
		if c.outer || c.name == "" || c.name[0] == '$' || table != "" && c.table != table || c.table == "" {
			continue
		}
		d := levenshtein(c.name, name)
		if d > len([]rune(name))/2 {
			continue
		}
		switch {
		case d < best:
			best, first, second = d, c, nil
		case d == best && second != nil:
			first, second = nil, nil // too many as near: none is meant
		case d == best && first != nil:
			second = c
		}
	}
	switch {
	case first != nil && second != nil:
		err.Hint = fmt.Sprintf("Perhaps you meant to reference the column \"%s.%s\" or the column \"%s.%s\".",
			first.table, first.name, second.table, second.name)
	case first != nil:
		err.Hint = fmt.Sprintf("Perhaps you meant to reference the column \"%s.%s\".", first.table, first.name)
	}
	return err
}

// levenshtein is the edit distance between a and b, in characters, each
// insertion, deletion and substitution costing 1.
func levenshtein(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}
