package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hummer-db/hummer/exec"
)

// TaskSnapshot is what a task stores for a checkpoint (Marshal): its source's
// state and its chain's operators' states, by position in the chain, each in
// the operator's own encoding (an envelope, for the built-in ones).
type TaskSnapshot struct {
	Source []byte         `json:"source,omitempty"`
	Ops    map[int][]byte `json:"ops,omitempty"`
	// Uploaded is what the operators uploaded beside their blobs for this
	// checkpoint (exec.AsyncCheckpointed), for its size.
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

// taskMagic and taskVersion mark a TaskSnapshot's envelope: a header section
// (JSON: which operators have state, Uploaded, Ended), the source's state, then
// each operator's, the blobs as they are. (As JSON, a snapshot's blobs went
// through base64: a third bigger, and most of what storing a large state cost.)
const (
	taskMagic   = "TASK"
	taskVersion = 1
)

type taskHeader struct {
	Ops      []int `json:"ops,omitempty"`
	Uploaded int64 `json:"uploaded,omitempty"`
	Ended    bool  `json:"ended,omitempty"`
}

// Marshal encodes st for the checkpoint store.
func (st TaskSnapshot) Marshal() ([]byte, error) {
	h := taskHeader{Uploaded: st.Uploaded, Ended: st.Ended}
	for i := range st.Ops {
		h.Ops = append(h.Ops, i)
	}
	slices.Sort(h.Ops)
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	sections := [][]byte{head, st.Source}
	for _, i := range h.Ops {
		sections = append(sections, st.Ops[i])
	}
	return Encode(taskMagic, taskVersion, sections...), nil
}

// UnmarshalTaskSnapshot decodes what Marshal encoded, or the JSON form that
// checkpoints taken before it, and EndedMarker, have.
func UnmarshalTaskSnapshot(data []byte) (TaskSnapshot, error) {
	var st TaskSnapshot
	if bytes.HasPrefix(data, []byte("{")) {
		err := json.Unmarshal(data, &st)
		return st, err
	}
	sections, err := Decode("task snapshot", taskMagic, taskVersion, data)
	if err != nil {
		return st, err
	}
	var h taskHeader
	if len(sections) < 2 {
		return st, fmt.Errorf("task snapshot: %w: %d sections", ErrBadState, len(sections))
	}
	if err := json.Unmarshal(sections[0], &h); err != nil {
		return st, fmt.Errorf("task snapshot: %w: header: %v", ErrBadState, err)
	}
	if len(sections) != 2+len(h.Ops) {
		return st, fmt.Errorf("task snapshot: %w: %d sections for %d operators", ErrBadState, len(sections), len(h.Ops))
	}
	st.Uploaded, st.Ended = h.Uploaded, h.Ended
	if len(sections[1]) > 0 {
		st.Source = sections[1]
	}
	for k, i := range h.Ops {
		if st.Ops == nil {
			st.Ops = map[int][]byte{}
		}
		if s := sections[2+k]; len(s) > 0 { // an empty state is none, as a nil one went through JSON
			st.Ops[i] = s
		} else {
			st.Ops[i] = nil
		}
	}
	return st, nil
}
