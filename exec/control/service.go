package control

import (
	"context"

	"google.golang.org/grpc"
)

// The JobManager's one RPC: the Session stream (see messages.go).
const sessionMethod = "/hummer.JobManager/Session"

type sessionHandler interface {
	session(stream grpc.ServerStream) error
}

var jobManagerService = grpc.ServiceDesc{
	ServiceName: "hummer.JobManager",
	HandlerType: (*sessionHandler)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Session",
		Handler:       func(srv any, stream grpc.ServerStream) error { return srv.(sessionHandler).session(stream) },
		ServerStreams: true,
		ClientStreams: true,
	}},
}

// openSession opens the Session stream on conn.
func openSession(ctx context.Context, conn *grpc.ClientConn) (grpc.ClientStream, error) {
	return conn.NewStream(ctx, &jobManagerService.Streams[0], sessionMethod, useJSON())
}
