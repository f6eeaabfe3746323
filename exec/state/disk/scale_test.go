package disk_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/state/disk"
)

// TestCheckpointScale is issue 27's checkpoint benchmark, run only with
// HUMMER_STATE_CKPT_BYTES set (the suite "state" of bench/cmd/wordcount runs
// it): a DB of that many bytes of keys and values (16-byte keys, 112-byte
// incompressible values) in HUMMER_STATE_MEMORY (default 256MiB), a full
// checkpoint of it, then rounds in which one percent of the keys change and
// a checkpoint follows: first the keys of a few contiguous blocks, then keys
// drawn at random from the whole key space. It writes what each checkpoint
// uploaded and took to the JSON file HUMMER_STATE_OUT.
func TestCheckpointScale(t *testing.T) {
	env := os.Getenv("HUMMER_STATE_CKPT_BYTES")
	if env == "" {
		t.Skip("HUMMER_STATE_CKPT_BYTES not set: a benchmark")
	}
	size, err := strconv.ParseInt(env, 10, 64)
	if err != nil || size <= 0 {
		t.Fatalf("HUMMER_STATE_CKPT_BYTES=%q", env)
	}
	mem := int64(256 << 20)
	if v := os.Getenv("HUMMER_STATE_MEMORY"); v != "" {
		if mem, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	const keyLen, valLen, rounds = 16, 112, 3
	keys := size / (keyLen + valLen)
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := store.Files("job", "0.0")
	db, err := disk.Open(disk.Options{Dir: t.TempDir(), Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	rng := rand.New(rand.NewPCG(27, 27))
	key, val := make([]byte, keyLen), make([]byte, valLen)
	// put writes the keys next() returns, n of them, with fresh random values.
	put := func(n int64, next func() int64) {
		t.Helper()
		b := db.NewBatch()
		for i := range n {
			binary.BigEndian.PutUint64(key, 'k'<<56)
			binary.BigEndian.PutUint64(key[8:], uint64(next()))
			for j := 0; j < valLen; j += 8 {
				binary.LittleEndian.PutUint64(val[j:], rng.Uint64())
			}
			if err := b.Set(key, val); err != nil {
				t.Fatal(err)
			}
			if i%8192 == 8191 {
				if err := b.Commit(); err != nil {
					t.Fatal(err)
				}
				b = db.NewBatch()
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	res := checkpointScaleResult{Keys: keys, KeyBytes: keyLen, ValueBytes: valLen, StateMemory: mem}
	var id int64
	take := func(kind string) {
		t.Helper()
		id++
		cpu0, start := cpuTime(), time.Now()
		p, err := db.StartCheckpoint(id)
		if err != nil {
			t.Fatal(err)
		}
		started := time.Since(start)
		m, err := p.Finish(ctx, files)
		if err != nil {
			t.Fatal(err)
		}
		res.Checkpoints = append(res.Checkpoints, checkpointScaleRow{Kind: kind, Uploaded: m.Uploaded, Total: m.Total,
			Files: len(m.Shared), StartS: started.Seconds(), WallS: time.Since(start).Seconds(), CPUS: (cpuTime() - cpu0).Seconds()})
		if err := store.Complete(ctx, "job", id); err != nil {
			t.Fatal(err)
		}
		if err := store.Prune(ctx, "job", 2); err != nil {
			t.Fatal(err)
		}
		c := res.Checkpoints[len(res.Checkpoints)-1]
		t.Logf("checkpoint %d (%s): uploaded %.1f MB of %.1f MB in %.2f s", id, kind, float64(c.Uploaded)/1e6, float64(c.Total)/1e6, c.WallS)
	}

	cpu0, start := cpuTime(), time.Now()
	next := int64(0)
	put(keys, func() int64 { next++; return next - 1 })
	res.LoadWallS, res.LoadCPUS = time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds()
	take("full")
	changed := keys / 100
	const blocks = 10 // contiguous runs of keys, spread over the key space
	for r := range rounds {
		per := changed / blocks
		for b := range int64(blocks) {
			lo := (b*keys/blocks + int64(r)*per) % keys
			k := lo
			put(per, func() int64 { k++; return (k - 1) % keys })
		}
		take("blocks")
	}
	for range rounds {
		put(changed, func() int64 { return rng.Int64N(keys) })
		take("random")
	}
	res.ChangedKeys = changed
	res.Blocks = blocks
	res.DiskBytes = db.DiskBytes()
	if out := os.Getenv("HUMMER_STATE_OUT"); out != "" {
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkpointScaleResult is what TestCheckpointScale writes; bench/cmd/wordcount
// reads it (state.go there has its copy of the type).
type checkpointScaleResult struct {
	Keys        int64                `json:"keys"`
	KeyBytes    int                  `json:"key_bytes"`
	ValueBytes  int                  `json:"value_bytes"`
	StateMemory int64                `json:"state_memory"`
	LoadWallS   float64              `json:"load_wall_s"`
	LoadCPUS    float64              `json:"load_cpu_s"`
	ChangedKeys int64                `json:"changed_keys"` // per round
	Blocks      int                  `json:"blocks"`       // contiguous runs of a "blocks" round
	DiskBytes   int64                `json:"disk_bytes"`   // the DB's files at the end
	Checkpoints []checkpointScaleRow `json:"checkpoints"`
}

type checkpointScaleRow struct {
	Kind     string  `json:"kind"` // full, blocks or random
	Uploaded int64   `json:"uploaded"`
	Total    int64   `json:"total"`
	Files    int     `json:"files"`
	StartS   float64 `json:"start_s"` // StartCheckpoint: the part on the task's goroutine
	WallS    float64 `json:"wall_s"`  // StartCheckpoint and Finish
	CPUS     float64 `json:"cpu_s"`   // the whole process's, pebble's compactions included
}

// cpuTime returns the process's user + system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
