package state

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestTaskSnapshotMarshal: a snapshot comes back as it went in, through the
// envelope and through the JSON of older checkpoints; a damaged one is refused.
func TestTaskSnapshotMarshal(t *testing.T) {
	st := TaskSnapshot{Source: []byte("src"), Ops: map[int][]byte{0: []byte("zero"), 3: nil, 7: []byte("seven")}, Uploaded: 42}
	data, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("c2V2ZW4")) { // base64 of "seven"
		t.Fatal("blobs went through base64")
	}
	got, err := UnmarshalTaskSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("got %+v, want %+v", got, st)
	}
	old, err := UnmarshalTaskSnapshot([]byte(`{"source":"c3Jj","ops":{"0":"emVybw=="},"uploaded":5}`))
	if err != nil || string(old.Source) != "src" || string(old.Ops[0]) != "zero" || old.Uploaded != 5 {
		t.Fatalf("the JSON form: %+v, %v", old, err)
	}
	if ended, err := UnmarshalTaskSnapshot(EndedMarker); err != nil || !ended.Ended {
		t.Fatalf("EndedMarker: %+v, %v", ended, err)
	}
	data[len(data)-1] ^= 1
	if _, err := UnmarshalTaskSnapshot(data); !errors.Is(err, ErrBadState) {
		t.Fatalf("a damaged snapshot: %v, want ErrBadState", err)
	}
	if _, err := UnmarshalTaskSnapshot(data[:len(data)-3]); !errors.Is(err, ErrBadState) {
		t.Fatalf("a truncated snapshot: %v, want ErrBadState", err)
	}
}
