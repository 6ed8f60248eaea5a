package host

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

type policyFunc func(context.Context, abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error)

func (f policyFunc) Merge(ctx context.Context, req abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
	return f(ctx, req)
}

// TestSafePolicy: an embedder's policy that panics is an error, and one
// that ignores its context does not hold the stage past the context's end.
func TestSafePolicy(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	tests := []struct {
		name    string
		policy  policyFunc
		cancel  bool
		wantErr string
		want    string
	}{
		{"answers", func(context.Context, abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
			return abi.PolicyMergeAnswer{Decision: abi.PolicyAllow}, nil
		}, false, "", abi.PolicyAllow},
		{"fails", func(context.Context, abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
			return abi.PolicyMergeAnswer{}, errors.New("engine down")
		}, false, "engine down", ""},
		{"panics", func(context.Context, abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
			panic("boom")
		}, false, "policy panicked: boom", ""},
		{"ignores its context", func(context.Context, abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
			<-stuck
			return abi.PolicyMergeAnswer{Decision: abi.PolicyAllow}, nil
		}, true, "policy did not answer before the stage ended", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				time.AfterFunc(10*time.Millisecond, cancel)
			}
			a, err := safePolicy(ctx, tt.policy, abi.PolicyMergeRequest{})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Empty(t, a.Decision)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.Decision)
		})
	}
}
