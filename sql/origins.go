package sql

import "github.com/hummer-db/hummer/exec/expr"

// ColumnOrigin is the table column a result column reads as it is, as
// PostgreSQL's RowDescription names it (clients such as pgjdbc's
// ResultSetMetaData.getTableName and isNullable look it up in pg_attribute):
// the table's oid and the column's number from 1; zero for a computed
// column.
type ColumnOrigin struct {
	Table  int64
	Column int
}

// ColumnOrigins returns the origin of each of p's output columns.
func ColumnOrigins(p Plan) []ColumnOrigin {
	out := make([]ColumnOrigin, len(p.Schema()))
	for i := range out {
		out[i] = originOf(p, i)
	}
	return out
}

func originOf(p Plan, col int) ColumnOrigin {
	switch x := p.(type) {
	case *Scan:
		c := col
		if x.Columns != nil {
			if col >= len(x.Columns) {
				return ColumnOrigin{}
			}
			c = x.Columns[col]
		}
		oid := x.Table.OID
		if x.Table.IsSystem() {
			oid = SystemOID(x.Table.Name)
		}
		if oid == 0 {
			return ColumnOrigin{}
		}
		return ColumnOrigin{Table: oid, Column: c + 1}
	case *Project:
		if col < len(x.Exprs) && x.Exprs[col].Kind == expr.KindColumn {
			return originOf(x.Input, x.Exprs[col].Col)
		}
	case *Filter:
		return originOf(x.Input, col)
	case *Sort:
		return originOf(x.Input, col)
	case *Limit:
		return originOf(x.Input, col)
	case *Join:
		// Left columns then right columns, when the join keeps both.
		l, r := len(x.Left.Schema()), len(x.Right.Schema())
		if x.Kind.Filters() && col < l {
			return originOf(x.Left, col)
		}
		if len(x.Out) != l+r {
			return ColumnOrigin{}
		}
		if col < l {
			return originOf(x.Left, col)
		}
		return originOf(x.Right, col-l)
	}
	return ColumnOrigin{}
}
