package state

import "github.com/hummer-db/hummer/exec"

// TaskSnapshot is what a task stores for a checkpoint, as JSON: its source's
// state and its chain's operators' states, by position in the chain, each in
// the operator's own encoding (an envelope, for the built-in ones).
type TaskSnapshot struct {
	Source []byte         `json:"source,omitempty"`
	Ops    map[int][]byte `json:"ops,omitempty"`
	// Uploaded is what the operators uploaded beside their blobs for this
	// checkpoint (exec.StateUploader), for its size.
	Uploaded int64 `json:"uploaded,omitempty"`
	// Ended marks a task that had ended before the checkpoint: the
	// coordinator writes it, and the state the task ended with is the store's
	// final state of the task (StreamTask's storeFinal).
	Ended bool `json:"ended,omitempty"`
}

// TaskKey is the name of task id's state in the checkpoint store.
func TaskKey(id exec.TaskID) string { return id.String() }

// EndedMarker is the state the coordinator stores for a task that had ended
// before a checkpoint and so took no part in it.
var EndedMarker = []byte(`{"ended":true}`)
