package operators

// What the operators on the disk state backend (hashagg_disk.go,
// join_stream_disk.go) share: their checkpoint's blob, an envelope of the
// operator's JSON header and the DB's manifest (the files themselves are in
// the checkpoint store), and its two halves, the DB's checkpoint taken on
// the task's goroutine and its upload finished off it
// (exec.AsyncCheckpointed).

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
)

// startDiskSnapshot takes checkpoint id of db as it is now and returns the
// rest: the upload of its new files to files, then the blob (magic, version)
// of hdr and the DB's manifest. what names the operator in errors.
func startDiskSnapshot(what string, db *disk.DB, files exec.StateFiles, id int64, magic string, version uint16, hdr []byte) (exec.PendingState, error) {
	p, err := db.StartCheckpoint(id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return func(ctx context.Context) ([]byte, int64, error) {
		m, err := p.Finish(ctx, files)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", what, err)
		}
		man, err := disk.MarshalManifest(m)
		if err != nil {
			return nil, 0, err
		}
		return state.Encode(magic, version, hdr, man), m.Uploaded, nil
	}, nil
}

// decodeDiskSnapshot reads a blob startDiskSnapshot wrote: its header into
// hdr (a pointer, for json.Unmarshal), and its manifest.
func decodeDiskSnapshot(what, magic string, version uint16, data []byte, hdr any) (*disk.Manifest, error) {
	sections, err := state.Decode(what, magic, version, data)
	if err != nil {
		return nil, err
	}
	if len(sections) != 2 {
		return nil, fmt.Errorf("%s: %w: %d sections, want 2", what, state.ErrBadState, len(sections))
	}
	if err := json.Unmarshal(sections[0], hdr); err != nil {
		return nil, fmt.Errorf("%s: %w: header: %v", what, state.ErrBadState, err)
	}
	m, err := disk.UnmarshalManifest(sections[1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return m, nil
}

// finishNow finishes a pending snapshot on the caller's goroutine, for
// SnapshotState.
func finishNow(ctx context.Context, p exec.PendingState, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	blob, _, err := p(ctx)
	return blob, err
}

// donePending is the pending snapshot of a blob already taken whole.
func donePending(blob []byte, err error) (exec.PendingState, error) {
	if err != nil {
		return nil, err
	}
	return func(context.Context) ([]byte, int64, error) { return blob, 0, nil }, nil
}

// isDiskState reports whether data is a blob startDiskSnapshot wrote with
// magic.
func isDiskState(data []byte, magic string) bool {
	return len(data) >= len(magic) && string(data[:len(magic)]) == magic
}
