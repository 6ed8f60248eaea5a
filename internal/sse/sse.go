// Package sse reads a stream of server-sent events (the text/event-stream
// format of the HTML Living Standard, §9.2.6 "Interpreting an event
// stream"): lines ended by CRLF, LF or CR; fields "data", "event" and "id";
// comments; an event dispatched at each blank line. It reads in time
// linear in the stream, and bounds each event.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Event is one dispatched event.
type Event struct {
	// LastID is the stream's last event id as of this event (an id set
	// by an earlier event holds until another is set).
	LastID string
	// Type is the event's "event" field; "" when it has none (a
	// "message" event, as the standard defaults it).
	Type string
	// Data is the event's data lines joined by LF; empty for an event
	// without data (a keep-alive, or one that only sets the id).
	Data []byte
}

// ErrEventTooLarge is returned when one event, its fields, comments and
// line endings counted, exceeds the bound given to Read.
var ErrEventTooLarge = errors.New("sse: event too large")

// Read reads events from r and calls yield for each, in order, until r
// ends (nil), r fails (its error), an event exceeds max bytes
// (ErrEventTooLarge) or yield returns an error (that error). An event not
// ended by a blank line before r ends is not dispatched.
func Read(r io.Reader, max int, yield func(Event) error) error {
	br := bufio.NewReader(r)
	var (
		line, data []byte
		typ, last  string
		n          int
		prevCR     bool
		first      = true
	)
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if prevCR {
			prevCR = false
			if b == '\n' {
				continue // the LF of a CRLF
			}
		}
		if n++; n > max {
			return fmt.Errorf("%w: over %d bytes", ErrEventTooLarge, max)
		}
		if b != '\r' && b != '\n' {
			line = append(line, b)
			continue
		}
		prevCR = b == '\r'
		if first {
			line, first = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")), false
		}
		if len(line) == 0 { // dispatch
			ev := Event{LastID: last, Type: typ, Data: bytes.TrimSuffix(data, []byte("\n"))}
			data, typ, n = nil, "", 0
			if err := yield(ev); err != nil {
				return err
			}
			continue
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if found && len(name) == 0 {
			line = line[:0]
			continue // a comment
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			data = append(append(data, value...), '\n')
		case "event":
			typ = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				last = string(value)
			}
		}
		// "retry" and unknown fields are ignored.
		line = line[:0]
	}
}
