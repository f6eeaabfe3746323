package operators

import "github.com/hummer-db/hummer/exec/vector"

// changeSet is what the cache of an operator on the disk state backend holds
// that its DB does not: the ids (groups, rows, partitions, keys: ids into the
// cache's table) changed since they were loaded or last written back. A
// write-back goes through dirty, writes each id and cleans it.
type changeSet struct {
	changed []bool   // by id
	dirty   []uint32 // the changed ids, each once, in the order first changed
}

// grow makes room for marks of n cached ids.
func (c *changeSet) grow(n int) { c.changed = vector.GrowZero(c.changed, n) }

// mark records id (below the n of the last grow) as changed.
func (c *changeSet) mark(id uint32) {
	if !c.changed[id] {
		c.changed[id] = true
		c.dirty = append(c.dirty, id)
	}
}

// markIDs records ids, among n cached ones, as changed.
func (c *changeSet) markIDs(n int, ids []uint32) {
	c.grow(n)
	for _, id := range ids {
		c.mark(id)
	}
}

// markAll records every one of n cached ids as changed, and no other: state
// of the memory backend restored into the cache goes to the DB at the next
// write-back.
func (c *changeSet) markAll(n int) {
	c.forget()
	c.grow(n)
	for id := range n {
		c.changed[id] = true
		c.dirty = append(c.dirty, uint32(id))
	}
}

// forget drops every mark: the cache was emptied (after a write-back) or
// replaced from the DB.
func (c *changeSet) forget() { c.changed, c.dirty = c.changed[:0], c.dirty[:0] }

// cacheKeys builds the DB keys of the cached ids first..n-1 in arena, each
// written by appendKey, and appends them to keys as slices of it; it returns
// both. The arena is filled first and sliced after: appending moves it.
func cacheKeys(arena []byte, keys [][]byte, first, n int, appendKey func(dst []byte, id uint32) ([]byte, error)) ([]byte, [][]byte, error) {
	offs := make([]int, 0, n-first+1)
	for id := first; id < n; id++ {
		offs = append(offs, len(arena))
		var err error
		if arena, err = appendKey(arena, uint32(id)); err != nil {
			return arena, keys, err
		}
	}
	offs = append(offs, len(arena))
	for i := range n - first {
		keys = append(keys, arena[offs[i]:offs[i+1]])
	}
	return arena, keys, nil
}
