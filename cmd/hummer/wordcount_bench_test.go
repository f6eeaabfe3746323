package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hummer-db/hummer/session"
)

// BenchmarkWordCount runs WordCount over ten copies of the sample corpus in an
// embedded engine (no wire), for profiling the engine's hot path with
// `go test -bench WordCount -cpuprofile`. Side-by-side figures against peers
// live in bench/.
func BenchmarkWordCount(b *testing.B) {
	kjv, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	input := filepath.Join(dir, "kjv10.txt")
	f, err := os.Create(input)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		f.Write(kjv)
	}
	f.Close()
	eng, err := openEngine(dir, 2, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	s := eng.NewSession()
	ctx := context.Background()
	drain := func(r *session.Result) error {
		if r.Rows == nil {
			return nil
		}
		for {
			rec, err := r.Rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			rec.Release()
		}
	}
	if err := s.Exec(ctx, fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s'", input), drain); err != nil {
		b.Fatal(err)
	}
	q := `SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t WHERE word <> '' GROUP BY word`
	// The generality checks: a variant must cost about what the plain
	// query does.
	upper := `SELECT upper(word), COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t WHERE word <> '' GROUP BY upper(word)`
	long := `SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t WHERE word <> '' AND length(word) > 3 GROUP BY word`
	for _, c := range []struct {
		name  string
		par   int
		query string
	}{{"parallelism=2", 2, q}, {"parallelism=1", 1, q}, {"length>3", 2, long}, {"upper", 2, upper}} {
		b.Run(c.name, func(b *testing.B) {
			if err := s.Exec(ctx, fmt.Sprintf("SET parallelism = %d", c.par), drain); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(10 * len(kjv)))
			for i := 0; i < b.N; i++ {
				if err := s.Exec(ctx, c.query, drain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
