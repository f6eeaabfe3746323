package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestFilesPrune: shared files are counted by the checkpoints that refer to
// them: pruning deletes those only the pruned checkpoints referred to, keeps
// those a kept one (or one still being taken) needs, and a file the store
// lacks downloads as fs.ErrNotExist. On a file:// store and on S3 (a fake
// server), through the same code.
func TestFilesPrune(t *testing.T) {
	for _, kind := range []string{"file", "s3"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			url := "file://" + t.TempDir()
			if kind == "s3" {
				url = "s3://state?region=eu-west-1&endpoint=" + fakeS3(t, "state")
			}
			s, err := Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			local := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(local, []byte("table"), 0o644); err != nil {
				t.Fatal(err)
			}
			files := s.Files("job", "1.0")
			// Checkpoint 1 needs a and b; 2 needs b and c; 3, not complete
			// yet, needs c and d.
			for id, names := range map[int64][]string{1: {"a", "b"}, 2: {"b", "c"}, 3: {"c", "d"}} {
				if err := files.Refer(ctx, id, "run", names); err != nil {
					t.Fatal(err)
				}
				for _, n := range names {
					if err := files.Upload(ctx, n, local); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, id := range []int64{1, 2} {
				if err := s.Complete(ctx, "job", id); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Prune(ctx, "job", 1); err != nil {
				t.Fatal(err)
			}
			for name, kept := range map[string]bool{"a": false, "b": true, "c": true, "d": true} {
				dst := filepath.Join(t.TempDir(), name)
				err := files.Download(ctx, name, dst)
				if kept && err != nil {
					t.Errorf("%s, needed by a kept checkpoint: %v", name, err)
				}
				if !kept && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s, needed only by the pruned checkpoint: %v, want it gone", name, err)
				}
				if kept {
					if data, _ := os.ReadFile(dst); string(data) != "table" {
						t.Errorf("%s downloads as %q", name, data)
					}
				}
			}
		})
	}
}
