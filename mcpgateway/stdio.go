package mcpgateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrameBytes caps one newline-delimited JSON-RPC message on the
// gateway's stdio transport.
const MaxFrameBytes = 16 << 20

// NewStdioTransport returns the downstream transport of `gatehost mcp`
// over stdio (MCP "Transports", stdio: newline-delimited JSON-RPC). Unlike
// a plain mcp.IOTransport, a frame that is not a JSON-RPC message (not
// JSON, an unknown shape, or over MaxFrameBytes) does not end the
// connection: the client gets a JSON-RPC error for it (-32700 parse error,
// or -32600 invalid request with the frame's id when it has one, per
// JSON-RPC 2.0 §5.1) and the next frame is read. in and out are usually
// os.Stdin and os.Stdout.
func NewStdioTransport(in io.ReadCloser, out io.WriteCloser) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{Reader: &frameFilter{src: in, r: bufio.NewReaderSize(in, 64<<10), w: w}, Writer: w, MaxLineLength: MaxFrameBytes + 1}
}

// lockedWriter serialises whole writes: the SDK writes one message per
// Write, and so does the frame filter's error answers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// frameFilter passes on only the lines that decode as JSON-RPC messages
// and answers the others itself.
type frameFilter struct {
	src io.Closer
	r   *bufio.Reader
	w   io.Writer
	buf []byte // the rest of the current good line not yet read
}

func (f *frameFilter) Close() error { return f.src.Close() }

func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		line, err := f.readLine()
		if len(line) > 0 {
			if bad := checkFrame(line); bad != nil {
				_, _ = f.w.Write(bad)
			} else {
				f.buf = append(line, '\n')
			}
		}
		if err != nil && len(f.buf) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// errFrameTooLong marks a line over MaxFrameBytes, which readLine skips.
var errFrameTooLong = errors.New("frame too long")

// readLine returns the next line without its newline and surrounding
// white space. A line over MaxFrameBytes is consumed and returned as a
// marker the caller answers with a parse error.
func (f *frameFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxFrameBytes {
			line = nil
			// Skip to the end of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = f.r.ReadSlice('\n')
			}
			return []byte(tooLongMarker), dropEOFIfDone(err)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(line), err
	}
}

// tooLongMarker is not JSON, so checkFrame answers it with a parse error.
const tooLongMarker = "\x00frame over the size limit"

func dropEOFIfDone(err error) error {
	if err == nil {
		return nil
	}
	return err
}

// checkFrame returns nil for a line the SDK can take, or the JSON-RPC
// error answer to send instead.
func checkFrame(line []byte) []byte {
	if _, err := jsonrpc.DecodeMessage(line); err == nil {
		return nil
	}
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	code, msg, id := jsonrpc.CodeParseError, "Parse error", json.RawMessage("null")
	if json.Valid(line) {
		code, msg = jsonrpc.CodeInvalidRequest, "Invalid Request"
		if json.Unmarshal(line, &probe) == nil && isJSONRPCID(probe.ID) {
			id = probe.ID
		}
	}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{int64(code), msg}})
	return append(out, '\n')
}

// isJSONRPCID reports whether raw is a string or an integer, the ids
// JSON-RPC allows (null aside).
func isJSONRPCID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	var n int64
	return json.Unmarshal(raw, &n) == nil
}
