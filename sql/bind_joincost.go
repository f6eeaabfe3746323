package sql

// Cost-based join ordering over the estimates of bind_joinorder.go: a greedy
// left-deep order, and bushy trees by dynamic programming.

import (
	"math/bits"
	"slices"

	"github.com/hummer-db/hummer/exec/expr"
)

// greedyOrder returns a left-deep order of the leaves: with estimates est,
// from the one of most rows, each time the connected one (sel > 0) that
// makes the smallest join; without, in FROM order, each time the first
// connected one.
func greedyOrder(n int, est []float64, sel func(i, j int) float64) []int {
	first := 0
	for i := range est {
		if est[i] > est[first] {
			first = i
		}
	}
	used := make([]bool, n)
	order := []int{first}
	used[first] = true
	size := 0.0 // the estimated rows of the leaves joined so far
	if est != nil {
		size = est[first]
	}
	for len(order) < n {
		next, connected, nextSize := -1, false, 0.0
		for i := range n {
			if used[i] {
				continue
			}
			linked := false
			joined := size
			if est != nil {
				joined *= est[i]
			}
			for _, j := range order {
				if s := sel(i, j); s > 0 {
					linked = true
					if est != nil {
						joined *= s
					}
				}
			}
			better := est != nil && next >= 0 && (joined < nextSize || joined == nextSize && est[i] < est[next])
			switch {
			case next < 0, linked && !connected, linked == connected && better:
				next, connected, nextSize = i, linked, joined
			}
		}
		used[next] = true
		order = append(order, next)
		size = max(nextSize, 1)
	}
	return order
}

// bushyOrder returns the cheapest tree joining the leaves of estimated rows
// est, where sel(i, j) is the fraction of pairs of rows of leaves i and j
// their equalities keep (0: none), and classes(i, j) the classes of those
// equalities: a class joins a table to a set once, however many of the
// set's tables have a column of it (q5's nation key: customer, supplier and
// nation), as a column equal to another of the set brings no new condition. It considers every split of every set of
// leaves in two, each a set whose cheapest tree it knows already, and crosses
// sets only where no split of a set joins two connected sets by an equality.
// A join's bigger side probes; it costs the rows it probes, twice the rows
// it builds, and the rows it yields.
func bushyOrder(est []float64, sel func(i, j int) float64, classes func(i, j int) []int) *joinTree {
	n := len(est)
	full := 1<<n - 1
	adj := make([]int, n) // bit j of adj[i]: leaves i and j share an equality
	for i := range n {
		for j := range n {
			if i != j && sel(i, j) > 0 {
				adj[i] |= 1 << j
			}
		}
	}
	type plan struct {
		cost      float64
		tree      *joinTree
		connected bool // joined by equalities only, without a cross product
	}
	rows := make([]float64, full+1) // the estimated rows of each set
	nb := make([]int, full+1)       // the leaves connected to each set
	best := make([]plan, full+1)
	for set := 1; set <= full; set++ {
		i := bits.TrailingZeros(uint(set))
		rest := set &^ (1 << i)
		if rest == 0 {
			rows[set], nb[set] = max(est[i], 1), adj[i]
			best[set] = plan{tree: &joinTree{leaf: i}, connected: true}
			continue
		}
		r := rows[rest] * max(est[i], 1)
		var seen []int
		for j := range n {
			if rest&(1<<j) == 0 || adj[i]&(1<<j) == 0 {
				continue
			}
			ks := classes(i, j)
			if !slices.ContainsFunc(ks, func(k int) bool { return !slices.Contains(seen, k) }) {
				continue
			}
			seen = append(seen, ks...)
			r *= sel(i, j)
		}
		rows[set], nb[set] = max(r, 1), nb[rest]|adj[i]
		for _, cross := range []bool{false, true} {
			// Each split once: sub holds the set's first leaf.
			for sub := (set - 1) & set; sub > 0; sub = (sub - 1) & set {
				other := set ^ sub
				if sub&(1<<i) == 0 ||
					!cross && (nb[sub]&other == 0 || !best[sub].connected || !best[other].connected) {
					continue
				}
				l, r := sub, other
				if rows[r] > rows[l] {
					l, r = r, l
				}
				cost := best[l].cost + best[r].cost + rows[l] + 2*rows[r] + rows[set]
				if best[set].tree == nil || cost < best[set].cost {
					best[set] = plan{cost: cost, tree: &joinTree{left: best[l].tree, right: best[r].tree}, connected: !cross}
				}
			}
			if best[set].tree != nil {
				break
			}
		}
	}
	return best[full].tree
}

// equalityClasses returns the classes of FROM positions that conds' plain
// column equalities between two leaves make equal, of one type, as a map of
// each such position to its class's first position.
func equalityClasses(conds []*expr.Expr, owner map[int]int) map[int]int {
	class := map[int]int{}
	find := func(p int) int {
		for {
			q, ok := class[p]
			if !ok || q == p {
				return p
			}
			p = q
		}
	}
	for _, c := range conds {
		a, b, ok := columnEquality(c, owner)
		if !ok {
			continue
		}
		ra, rb := find(a.Col), find(b.Col)
		class[ra], class[rb] = min(ra, rb), min(ra, rb)
	}
	for p := range class {
		class[p] = find(p)
	}
	return class
}
