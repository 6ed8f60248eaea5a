package rewrite

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLEB(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		bits   uint
		signed bool
		want   int64 // as the signed or unsigned value
		err    string
	}{
		{name: "u32 0", in: []byte{0x00}, bits: 32, want: 0},
		{name: "u32 padded 0", in: []byte{0x80, 0x80, 0x80, 0x80, 0x00}, bits: 32, want: 0},
		{name: "u32 max", in: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, bits: 32, want: math.MaxUint32},
		{name: "u32 one bit too wide", in: []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, bits: 32, err: "wider"},
		{name: "u32 six bytes", in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, bits: 32, err: "longer"},
		{name: "u32 cut short", in: []byte{0x80, 0x80}, bits: 32, err: "truncated"},
		{name: "s32 -1", in: []byte{0x7f}, bits: 32, signed: true, want: -1},
		{name: "s32 -64 padded", in: []byte{0xc0, 0xff, 0xff, 0xff, 0x7f}, bits: 32, signed: true, want: -64},
		{name: "s32 min", in: []byte{0x80, 0x80, 0x80, 0x80, 0x78}, bits: 32, signed: true, want: math.MinInt32},
		{name: "s32 max", in: []byte{0xff, 0xff, 0xff, 0xff, 0x07}, bits: 32, signed: true, want: math.MaxInt32},
		{name: "s32 sign bits disagree", in: []byte{0xff, 0xff, 0xff, 0xff, 0x4f}, bits: 32, signed: true, err: "wider"},
		{name: "s32 positive too wide", in: []byte{0xff, 0xff, 0xff, 0xff, 0x08}, bits: 32, signed: true, err: "wider"},
		{name: "s33 type index", in: []byte{0x80, 0x80, 0x80, 0x80, 0x08}, bits: 33, signed: true, want: 1 << 31},
		{name: "s64 min", in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, bits: 64, signed: true, want: math.MinInt64},
		{name: "s64 max", in: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}, bits: 64, signed: true, want: math.MaxInt64},
		{name: "s64 last byte not an extension", in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, bits: 64, signed: true, err: "wider"},
		{name: "s64 eleven bytes", in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, bits: 64, signed: true, err: "longer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &reader{buf: tt.in, base: 100}
			v, err := r.leb(tt.bits, tt.signed, "value")
			if tt.err != "" {
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.ErrorIs(t, err, ErrMalformed)
				assert.Contains(t, e.Reason, tt.err)
				assert.Equal(t, 100, e.Offset, "offset of the value's first byte")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, int64(v))
			assert.True(t, r.done(), "every byte consumed")
			// The encoders write the shortest form, which reads back.
			enc := appendULEB(nil, v)
			if tt.signed {
				enc = appendSLEB(nil, int64(v))
			}
			back, err := (&reader{buf: enc}).leb(tt.bits, tt.signed, "again")
			require.NoError(t, err)
			assert.Equal(t, v, back)
		})
	}
}
