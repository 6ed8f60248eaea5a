package apart_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/apart"
)

func TestRun(t *testing.T) {
	cause := errors.New("the stage ended")
	tests := []struct {
		name string
		// fn is the work; release, closed by the test once Run has
		// returned, lets blocked work end.
		fn        func(release <-chan struct{}) int
		endCtx    bool // end the context once the work has started
		want      int
		wantErr   []error
		wantPanic any
	}{
		{name: "the work's result", fn: func(<-chan struct{}) int { return 42 }, want: 42},
		{name: "a zero result is a result", fn: func(<-chan struct{}) int { return 0 }, want: 0},
		{name: "abandoned at the context's end", endCtx: true,
			fn:      func(release <-chan struct{}) int { <-release; return 1 },
			wantErr: []error{apart.ErrAbandoned, cause}},
		{name: "a panic is an error, not the process's end",
			fn:        func(<-chan struct{}) int { panic("boom") },
			wantPanic: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			started, release, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
			fn := func() int {
				defer close(ended)
				close(started)
				return tt.fn(release)
			}
			if tt.endCtx {
				go func() { <-started; cancel(cause) }()
			}
			got, err := apart.Run(ctx, fn)
			close(release)
			<-ended // abandoned work still runs to its end, and nothing blocks it
			switch {
			case tt.wantPanic != nil:
				var pe *apart.PanicError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.wantPanic, pe.Value)
				assert.Contains(t, err.Error(), "boom")
			case tt.wantErr != nil:
				for _, want := range tt.wantErr {
					assert.ErrorIs(t, err, want)
				}
				assert.Zero(t, got)
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
			}
		})
	}
}
