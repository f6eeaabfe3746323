package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	s3 := "s3://ckpt/prefix/of/keys?region=us-east-1&endpoint=" + fakeS3(t, "ckpt")
	for _, url := range []string{"mem://", "file://" + filepath.Join(t.TempDir(), "ckpt"), s3} {
		t.Run(url[:4], func(t *testing.T) {
			s, err := Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, ok, err := s.Latest(ctx, "7"); ok || err != nil {
				t.Fatalf("Latest of a new job: ok=%v err=%v", ok, err)
			}
			for id := int64(1); id <= 5; id++ {
				for _, task := range []string{"0.0", "1.0"} {
					if err := s.Put(ctx, "7", id, task, []byte(fmt.Sprint(id, task))); err != nil {
						t.Fatal(err)
					}
				}
				if id != 4 { // 4 never completes
					if err := s.Complete(ctx, "7", id); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Another job's checkpoints stay apart.
			if err := s.Put(ctx, "70", 9, "0.0", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(ctx, "70", 9); err != nil {
				t.Fatal(err)
			}
			if id, ok, err := s.Latest(ctx, "7"); id != 5 || !ok || err != nil {
				t.Fatalf("Latest = %d, %v, %v; want 5", id, ok, err)
			}
			data, err := s.Get(ctx, "7", 3, "1.0")
			if err != nil || string(data) != "31.0" {
				t.Fatalf("Get = %q, %v", data, err)
			}
			if _, err := s.Get(ctx, "7", 3, "2.0"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get of a missing task: %v, want ErrNotFound", err)
			}
			if _, err := s.GetFinal(ctx, "7", "0.0"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("GetFinal before PutFinal: %v, want ErrNotFound", err)
			}
			if err := s.PutFinal(ctx, "7", "0.0", []byte("end")); err != nil {
				t.Fatal(err)
			}
			if err := s.Prune(ctx, "7", 2); err != nil {
				t.Fatal(err)
			}
			if data, err := s.GetFinal(ctx, "7", "0.0"); err != nil || string(data) != "end" {
				t.Errorf("final state after Prune: %q, %v", data, err)
			}
			ids, err := s.Completed(ctx, "7")
			if err != nil || !slices.Equal(ids, []int64{3, 5}) {
				t.Fatalf("after Prune(2): complete %v, %v; want [3 5]", ids, err)
			}
			if _, err := s.Get(ctx, "7", 2, "0.0"); !errors.Is(err, ErrNotFound) {
				t.Errorf("pruned state still there: %v", err)
			}
			if _, err := s.Get(ctx, "7", 4, "0.0"); err != nil {
				t.Errorf("an incomplete checkpoint newer than the kept ones was pruned: %v", err)
			}
			if err := s.DropJob(ctx, "7"); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.Latest(ctx, "7"); ok {
				t.Error("job still has checkpoints after DropJob")
			}
			if _, err := s.GetFinal(ctx, "7", "0.0"); !errors.Is(err, ErrNotFound) {
				t.Errorf("final state after DropJob: %v, want ErrNotFound", err)
			}
			if id, ok, _ := s.Latest(ctx, "70"); !ok || id != 9 {
				t.Errorf("DropJob of 7 touched job 70: %d, %v", id, ok)
			}
		})
	}
}

// TestStoreRemovesEmptyDirectories: fileblob leaves a directory per
// checkpoint; pruning and dropping a job remove them, and the temporary file
// of a write cut short with its checkpoint.
func TestStoreRemovesEmptyDirectories(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id := int64(1); id <= 4; id++ {
		if err := s.Put(ctx, "7", id, "0.0", []byte("state")); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, "7", id); err != nil {
			t.Fatal(err)
		}
	}
	// What a write killed before its rename leaves beside its target.
	if err := os.WriteFile(filepath.Join(dir, "7", "1", "1.0.18f0a2b3c4d5e6f7.tmp"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(ctx, "7", 2); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"7/1", "7/2"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Prune: %v, want it removed", gone, err)
		}
	}
	for _, kept := range []string{"7/3/0.0", "7/4/0.0", "7/complete/3", "7/complete/4"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s after Prune: %v", kept, err)
		}
	}
	if err := s.DropJob(ctx, "7"); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("after DropJob the store holds %v (%v), want nothing", entries, err)
	}
}
