// Package control is the control plane of distributed mode, the paper's "control
// flow" between the JobManager and its TaskManagers: registration, heartbeats,
// task deployment, cancellation and job status, on gRPC.
//
// The messages are plain Go structs carried as JSON (a gRPC codec registered
// under the content subtype "json"), so the ExecutionGraph a TaskManager receives
// is exactly the one the JobManager planned, in the same encoding EXPLAIN and the
// tests use, and no generated code stands between them. The services are
// declared by hand below as grpc.ServiceDesc values.
//
// It may import exec, exec/jobmanager, exec/taskmanager and exec/network: it
// joins a JobManager to TaskManagers in other processes.
package control

import (
	"encoding/json"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// jsonCodec marshals gRPC messages as JSON.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
func (jsonCodec) Name() string                       { return "json" }

var registerCodec sync.Once

// useJSON registers the codec (once, when the first client or server is made)
// and returns the call option that selects it.
func useJSON() grpc.CallOption {
	registerCodec.Do(func() { encoding.RegisterCodec(jsonCodec{}) })
	return grpc.CallContentSubtype("json")
}
