package sql

import (
	"fmt"
	"strings"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Format renders a plan as an indented tree, one node per line, children
// indented two spaces under their parent. Column references print as name#i:
// the name and position of the column in the node's input (for a Join's Extra,
// in the left columns followed by the right ones). Nodes that define their
// output end with "-> (name type, ...)".
func Format(p Plan) string {
	var sb strings.Builder
	formatNode(&sb, p, 0)
	return sb.String()
}

func formatNode(sb *strings.Builder, p Plan, depth int) {
	sb.WriteString(strings.Repeat("  ", depth))
	sb.WriteString(describeNode(p))
	sb.WriteByte('\n')
	for _, in := range p.Inputs() {
		formatNode(sb, in, depth+1)
	}
}

// describeNode is one node's line, without its children.
func describeNode(p Plan) string {
	switch p := p.(type) {
	case *Scan:
		cols := "*"
		if p.Columns != nil {
			names := make([]string, len(p.Columns))
			for i, c := range p.Columns {
				names[i] = p.Table.Columns[c].Name
			}
			cols = "[" + strings.Join(names, ", ") + "]"
		}
		return fmt.Sprintf("Scan %s engine=%s columns=%s -> %s", p.Table.Name, p.Table.Engine, cols, schemaText(p.Schema()))
	case *WorkTable:
		return fmt.Sprintf("WorkTable %s -> %s", p.Name, schemaText(p.Out))
	case *Values:
		rows := make([]string, len(p.Rows))
		for i, r := range p.Rows {
			rows[i] = "(" + exprList(r, nil) + ")"
		}
		return fmt.Sprintf("Values %s -> %s", strings.Join(rows, ", "), schemaText(p.Out))
	case *Filter:
		return "Filter " + FormatExpr(p.Cond, p.Input.Schema())
	case *Project:
		return fmt.Sprintf("Project %s -> %s", exprList(p.Exprs, p.Input.Schema()), schemaText(p.Out))
	case *Unnest:
		in := p.Input.Schema()
		if p.Func == "generate_series" {
			return fmt.Sprintf("Unnest generate_series(%s, %s, %s) -> %s", colText(p.Col, in), colText(p.Hi, in), colText(p.Step, in), schemaText(p.Out))
		}
		return fmt.Sprintf("Unnest %s(%s, %s) -> %s", p.Func, colText(p.Col, in), expr.FormatValue(types.StringValue(p.Sep)), schemaText(p.Out))
	case *Aggregate:
		in := p.Input.Schema()
		groups := make([]string, len(p.GroupBy))
		for i, g := range p.GroupBy {
			groups[i] = colText(g, in)
		}
		aggs := make([]string, len(p.Aggs))
		for i, a := range p.Aggs {
			arg := "*"
			if a.Arg >= 0 {
				arg = colText(a.Arg, in)
			}
			if a.Distinct {
				arg = "DISTINCT " + arg
			}
			if a.Func == "string_agg" {
				arg += ", " + expr.FormatValue(types.StringValue(a.Sep))
				for j, k := range a.Order {
					sep := ", "
					if j == 0 {
						sep = " ORDER BY "
					}
					arg += sep + colText(k.Col, in)
					if k.Desc {
						arg += " DESC"
					}
				}
			}
			aggs[i] = fmt.Sprintf("%s(%s)", a.Func, arg)
		}
		return fmt.Sprintf("Aggregate group=[%s] aggs=[%s] -> %s", strings.Join(groups, ", "), strings.Join(aggs, ", "), schemaText(p.Out))
	case *Join:
		ls, rs := p.Left.Schema(), p.Right.Schema()
		keys := make([]string, len(p.LeftKeys))
		for i := range p.LeftKeys {
			keys[i] = fmt.Sprintf("left.%s = right.%s", colText(p.LeftKeys[i], ls), colText(p.RightKeys[i], rs))
		}
		s := fmt.Sprintf("Join %s keys=[%s]", p.Kind, strings.Join(keys, ", "))
		if p.Extra != nil {
			s += " extra=" + FormatExpr(p.Extra, append(append(types.Schema{}, ls...), rs...))
		}
		return s + " -> " + schemaText(p.Out)
	case *Union:
		return "Union all -> " + schemaText(p.Out)
	case *MaxOneRow:
		return "MaxOneRow -> " + schemaText(p.Schema())
	case *Window:
		in := p.Input.Schema()
		var parts, funcs []string
		for _, c := range p.Partition {
			parts = append(parts, colText(c, in))
		}
		for _, f := range p.Funcs {
			var args []string
			for _, a := range f.Args {
				args = append(args, colText(a, in))
			}
			funcs = append(funcs, fmt.Sprintf("%s(%s)", f.Func, strings.Join(args, ", ")))
		}
		keys := make([]string, len(p.Order))
		for i, k := range p.Order {
			keys[i] = colText(k.Col, in)
			if k.Desc {
				keys[i] += " DESC"
			}
		}
		return fmt.Sprintf("Window partition=[%s] order=[%s] funcs=[%s] -> %s", strings.Join(parts, ", "), strings.Join(keys, ", "), strings.Join(funcs, ", "), schemaText(p.Out))
	case *Sort:
		in := p.Input.Schema()
		keys := make([]string, len(p.Keys))
		for i, k := range p.Keys {
			keys[i] = colText(k.Col, in)
			if k.Desc {
				keys[i] += " DESC"
			}
			if k.NullsFirst != k.Desc {
				if k.NullsFirst {
					keys[i] += " NULLS FIRST"
				} else {
					keys[i] += " NULLS LAST"
				}
			}
		}
		return "Sort " + strings.Join(keys, ", ")
	case *Limit:
		count := "ALL"
		if p.CountParam > 0 {
			count = fmt.Sprintf("$%d", p.CountParam)
		} else if p.Count >= 0 {
			count = fmt.Sprint(p.Count)
		}
		if p.OffsetParam > 0 {
			return fmt.Sprintf("Limit %s OFFSET $%d", count, p.OffsetParam)
		}
		if p.Offset > 0 {
			return fmt.Sprintf("Limit %s OFFSET %d", count, p.Offset)
		}
		return "Limit " + count
	}
	return fmt.Sprintf("%T", p)
}

func schemaText(s types.Schema) string {
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = f.Name + " " + f.Type.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func colText(i int, in types.Schema) string {
	if i >= 0 && i < len(in) {
		return fmt.Sprintf("%s#%d", in[i].Name, i)
	}
	return fmt.Sprintf("?#%d", i)
}

func exprList(es []*expr.Expr, in types.Schema) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = FormatExpr(e, in)
	}
	return strings.Join(parts, ", ")
}

// FormatExpr renders e as SQL-like text, its column references named from in
// (the schema of the input e reads) as name#position.
func FormatExpr(e *expr.Expr, in types.Schema) string {
	switch e.Kind {
	case expr.KindColumn:
		if e.Col >= 0 && e.Col < len(in) {
			return colText(e.Col, in)
		}
		return fmt.Sprintf("%s#%d", e.Name, e.Col)
	case expr.KindLiteral:
		if e.Value.Null && e.Type.ID != types.Null {
			return "NULL::" + e.Type.String()
		}
		return expr.FormatValue(e.Value)
	case expr.KindParam:
		return fmt.Sprintf("$%d", e.Param)
	case expr.KindCast:
		return fmt.Sprintf("CAST(%s AS %s)", FormatExpr(e.Args[0], in), e.Type)
	case expr.KindCall:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = FormatExpr(a, in)
		}
		switch {
		case len(args) == 2 && infixOp(e.Func), len(args) > 2 && (e.Func == "and" || e.Func == "or"):
			return "(" + strings.Join(args, " "+strings.ToUpper(e.Func)+" ") + ")"
		case e.Func == "neg":
			return "-" + args[0]
		case e.Func == "not":
			return "NOT " + args[0]
		}
		return e.Func + "(" + strings.Join(args, ", ") + ")"
	}
	return fmt.Sprintf("%s?", e.Kind)
}

func infixOp(f string) bool {
	switch f {
	case "+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "and", "or", "||":
		return true
	}
	return false
}
