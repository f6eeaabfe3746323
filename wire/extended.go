package wire

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// This file is the extended query protocol: Parse, Bind, Describe, Execute, Close,
// Sync and Flush, with named and unnamed statements and portals. Outside a
// transaction block every Sync ends the implicit transaction: it closes all
// portals, as PostgreSQL does at commit; in a block they stay open until it
// ends. A failed message makes the server skip the rest up to Sync
// (conn.ignoreTillSync), and fails the block.

// Preparer is implemented by sessions that support the extended query protocol;
// for other sessions its messages are refused with 0A000.
type Preparer interface {
	// Prepare parses and binds a query of at most one statement, reporting its
	// parameter types and result columns.
	// paramTypes are the types the client declared for the parameters (the
	// null type where it declared none).
	Prepare(ctx context.Context, query string, paramTypes []types.Type) (*session.Prepared, error)
}

// extStatement is a prepared statement.
type extStatement struct {
	prep *session.Prepared
	// paramOIDs are the parameter types the client sees and binary parameters are
	// decoded as: those Parse declared, else those the session inferred.
	paramOIDs []uint32
}

// extPortal is a bound statement, run at its first Execute.
type extPortal struct {
	stmt    *extStatement
	params  []types.Value
	formats []int16 // result format of each column
	started bool
	res     *session.Result   // set once started, when the statement returns rows
	pending arrow.RecordBatch // rows of a batch left by a suspended Execute
	done    bool
}

// close releases the portal's rows and stops the job producing them.
func (p *extPortal) close() {
	if p.pending != nil {
		p.pending.Release()
		p.pending = nil
	}
	if p.res != nil && p.res.Rows != nil {
		p.res.Rows.Close()
	}
	p.res = nil
}

// protoError is an error of the extended protocol with its SQLSTATE.
type protoError struct{ code, msg string }

func (e *protoError) Error() string    { return e.msg }
func (e *protoError) SQLState() string { return e.code }

func protoErrorf(code, format string, args ...any) error {
	return &protoError{code: code, msg: fmt.Sprintf(format, args...)}
}

// extended handles one extended-protocol message. An error is reported to the
// client, after which messages are skipped until Sync.
func (c *conn) extended(msg pgproto3.FrontendMessage) {
	var err error
	switch m := msg.(type) {
	case *pgproto3.Parse:
		err = c.parse(m)
	case *pgproto3.Bind:
		err = c.bind(m)
	case *pgproto3.Describe:
		err = c.describe(m)
	case *pgproto3.Execute:
		err = c.execute(m)
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(c.stmts, m.Name)
		} else if p := c.portals[m.Name]; p != nil {
			p.close()
			delete(c.portals, m.Name)
		}
		c.send(&pgproto3.CloseComplete{})
	}
	if err != nil && c.writeErr == nil {
		resp, internal := errorResponse(err)
		c.srv.observe(func(o Observer) { o.Error(resp.Code) })
		if internal {
			c.logInternal("extended protocol message failed with an internal error", err)
		} else {
			c.log.Debug("extended protocol message failed", "err", err, "code", resp.Code)
		}
		c.send(resp)
		c.ignoreTillSync = true
		c.failTransaction()
	}
}

// closePortals closes every portal: at the end of a transaction (Sync or a
// simple Query outside a block, conn.endOfTransaction) and when the
// connection ends.
func (c *conn) closePortals() {
	for name, p := range c.portals {
		p.close()
		delete(c.portals, name)
	}
}

func (c *conn) parse(m *pgproto3.Parse) error {
	pr, ok := c.sess.(Preparer)
	if !ok {
		return protoErrorf(codeFeatureNotSupported, "the extended query protocol is not supported; use the simple query protocol")
	}
	if m.Name != "" && c.stmts[m.Name] != nil {
		return protoErrorf("42P05", "prepared statement %q already exists", m.Name)
	}
	declared := make([]types.Type, len(m.ParameterOIDs))
	for i, oid := range m.ParameterOIDs {
		t, err := paramType(oid)
		if err != nil {
			return err
		}
		declared[i] = t
	}
	prep, err := pr.Prepare(c.ctx, m.Query, declared)
	if err != nil {
		return err
	}
	st := &extStatement{prep: prep, paramOIDs: make([]uint32, len(prep.Params))}
	for i := range st.paramOIDs {
		if i < len(m.ParameterOIDs) && m.ParameterOIDs[i] != 0 {
			st.paramOIDs[i] = m.ParameterOIDs[i]
		} else {
			st.paramOIDs[i], _, _ = pgType(prep.Params[i])
		}
	}
	if c.stmts == nil {
		c.stmts = make(map[string]*extStatement)
	}
	c.stmts[m.Name] = st
	c.send(&pgproto3.ParseComplete{})
	return nil
}

func (c *conn) bind(m *pgproto3.Bind) error {
	st := c.stmts[m.PreparedStatement]
	if st == nil {
		return protoErrorf("26000", "prepared statement %q does not exist", m.PreparedStatement)
	}
	if old := c.portals[m.DestinationPortal]; old != nil {
		if m.DestinationPortal != "" {
			return protoErrorf("42P03", "portal %q already exists", m.DestinationPortal)
		}
		old.close()
	}
	if len(m.Parameters) != len(st.paramOIDs) {
		return protoErrorf(codeProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), m.PreparedStatement, len(st.paramOIDs))
	}
	pf := m.ParameterFormatCodes
	if len(pf) > 1 && len(pf) != len(m.Parameters) {
		return protoErrorf(codeProtocolViolation, "bind message has %d parameter formats but %d parameters", len(pf), len(m.Parameters))
	}
	params := make([]types.Value, len(st.prep.Params))
	for i := range params {
		v, err := decodeParam(m.Parameters[i], formatAt(pf, i), st.paramOIDs[i])
		if err != nil {
			return err
		}
		params[i] = v
	}
	schema := st.prep.Schema
	rf := m.ResultFormatCodes
	if len(rf) > 1 && len(rf) != len(schema) {
		return protoErrorf(codeProtocolViolation, "bind message has %d result formats but query has %d columns", len(rf), len(schema))
	}
	formats := make([]int16, len(schema))
	for i, f := range schema {
		formats[i] = formatAt(rf, i)
		if formats[i] == pgproto3.BinaryFormat && !binarySupported(f.Type) {
			return protoErrorf(codeFeatureNotSupported, "binary output of type %s is not supported", f.Type)
		}
	}
	if c.portals == nil {
		c.portals = make(map[string]*extPortal)
	}
	c.portals[m.DestinationPortal] = &extPortal{stmt: st, params: params, formats: formats}
	c.send(&pgproto3.BindComplete{})
	return nil
}

// formatAt is the format code of item i given a Bind message's list of codes:
// none means text for all, one applies to all.
func formatAt(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return pgproto3.TextFormat
	case 1:
		return codes[0]
	}
	return codes[i]
}

func (c *conn) describe(m *pgproto3.Describe) error {
	if m.ObjectType == 'S' {
		st := c.stmts[m.Name]
		if st == nil {
			return protoErrorf("26000", "prepared statement %q does not exist", m.Name)
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: st.paramOIDs})
		c.describeRows(st.prep.Schema, nil, st.prep.Origins)
		return nil
	}
	p := c.portals[m.Name]
	if p == nil {
		// A cursor DECLAREd in SQL is a portal too (psycopg 3's named
		// cursors describe theirs so); FETCH sends its rows as text.
		if cd, ok := c.sess.(CursorDescriber); ok {
			if schema, ok := cd.CursorSchema(m.Name); ok {
				c.describeRows(schema, nil, nil)
				return nil
			}
		}
		return protoErrorf("34000", "portal %q does not exist", m.Name)
	}
	c.describeRows(p.stmt.prep.Schema, p.formats, p.stmt.prep.Origins)
	return nil
}

// setOrigins names in rd the table column each column reads, where known.
func setOrigins(rd *pgproto3.RowDescription, origins []sql.ColumnOrigin) {
	for i, o := range origins {
		if i < len(rd.Fields) && o.Table > 0 {
			rd.Fields[i].TableOID, rd.Fields[i].TableAttributeNumber = uint32(o.Table), uint16(o.Column)
		}
	}
}

// describeRows sends RowDescription, or NoData for a statement without rows.
// origins, where known, name the table column each column reads.
func (c *conn) describeRows(schema types.Schema, formats []int16, origins []sql.ColumnOrigin) {
	if schema == nil {
		c.send(&pgproto3.NoData{})
		return
	}
	rd := rowDescription(schema)
	for i := range formats {
		rd.Fields[i].Format = formats[i]
	}
	setOrigins(rd, origins)
	c.send(rd)
}

func (c *conn) execute(m *pgproto3.Execute) error {
	p := c.portals[m.Portal]
	if p == nil {
		return protoErrorf("34000", "portal %q does not exist", m.Portal)
	}
	if p.stmt.prep.Empty() {
		c.send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	ctx, stop := context.WithCancel(c.ctx)
	c.setStatement(stop)
	defer func() {
		c.setStatement(nil)
		stop()
	}()
	if p.started {
		if err := p.stmt.prep.Resumable(); err != nil {
			return err
		}
	} else {
		p.started = true
		res, err := p.stmt.prep.Run(ctx, p.params)
		if err != nil {
			p.done = true
			return err
		}
		if err := c.dropPrepared(res); err != nil {
			p.done = true
			return err
		}
		c.sendWarnings(res.Warnings)
		c.sendNotices(res.Notices)
		if res.Rows == nil {
			p.done = true
			c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag)})
			return nil
		}
		p.res = res
		if len(res.Rows.Schema()) != len(p.formats) {
			return fmt.Errorf("wire: result has %d columns, described %d", len(res.Rows.Schema()), len(p.formats))
		}
	}
	if p.done {
		// PostgreSQL answers a finished portal with an empty completion.
		tag := "SELECT"
		if p.res != nil {
			tag = p.res.Tag
		}
		c.send(&pgproto3.CommandComplete{CommandTag: commandTag(tag, 0)})
		return nil
	}
	sent, suspended, err := c.sendPortalRows(ctx, p, int64(m.MaxRows))
	if err != nil {
		p.done = true
		p.close()
		return err
	}
	if suspended {
		c.send(&pgproto3.PortalSuspended{})
		return nil
	}
	p.done = true
	c.sendNotices(session.LateNotices(p.res.Rows))
	c.send(&pgproto3.CommandComplete{CommandTag: commandTag(p.res.Tag, sent)})
	// Keep res for its tag but stop its job now.
	p.res.Rows.Close()
	return nil
}

// sendPortalRows sends up to limit rows of p (0: all). It reports how many it
// sent and whether it stopped at the limit.
func (c *conn) sendPortalRows(ctx context.Context, p *extPortal, limit int64) (sent int64, suspended bool, err error) {
	ncols := len(p.formats)
	// All the rows: their producers may encode them (without a limit there
	// is no batch to cut at a row).
	if er, ok := p.res.Rows.(session.EncodingRows); ok && limit == 0 && p.pending == nil && er.EncodeWith(encoderFor(ncols, p.formats, c.timeZone())) {
		sent, err := c.sendEncodedRows(ctx, er)
		return sent, false, err
	}
	for {
		b := p.pending
		p.pending = nil
		if b == nil {
			b, err = p.res.Rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				return sent, false, nil
			}
			if err != nil {
				return sent, false, err
			}
		}
		n := b.NumRows()
		if limit > 0 && sent+n > limit {
			k := limit - sent
			head, rest := b.NewSlice(0, k), b.NewSlice(k, n)
			b.Release()
			b, p.pending, n = head, rest, k
		}
		err = c.sendBatch(b, ncols, p.formats)
		b.Release()
		if err != nil {
			return sent, false, err
		}
		sent += n
		if err := c.flush(); err != nil {
			return sent, false, err
		}
		if limit > 0 && sent == limit {
			// As PostgreSQL, suspend without looking ahead (a streaming query's next
			// row may be long in coming); the next Execute may then find no more rows.
			return sent, true, nil
		}
	}
}
