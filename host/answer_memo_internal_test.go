package host

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The answer memo only ever spares the checks for the very bytes that
// passed them: any other answer, however close, and any answer that failed,
// is checked in full, and a held answer decodes as it did the first time.
func TestAnswerMemo(t *testing.T) {
	const valid = `{"verdict":"accepted","basis":"exact","evidence":{"check":"exec","tool_id":"github.create_pull_request"}}`
	tests := []struct {
		name    string
		answer  string
		wantErr string // "" for an answer that passes
	}{
		{name: "the held answer", answer: valid},
		{name: "an unknown verdict", answer: `{"verdict":"acepted","basis":"exact","evidence":{"check":"exec","tool_id":"github.create_pull_request"}}`, wantErr: "verdict"},
		{name: "a member of another case", answer: `{"verdict":"accepted","basis":"exact","evidence":{"check":"exec","tool_id":"github.create_pull_request"},"Verdict":"rejected"}`, wantErr: "Verdict"},
		{name: "the held answer with a space more", answer: strings.Replace(valid, `,"basis"`, `, "basis"`, 1)},
		{name: "a rejection without findings", answer: `{"verdict":"rejected","evidence":{}}`, wantErr: "findings"},
	}
	var memo answerMemo
	want, err := checkAnswer([]byte(valid))
	require.NoError(t, err)
	_, err = checkAnswerMemo([]byte(valid), &memo)
	require.NoError(t, err)
	require.True(t, memo.holds([]byte(valid)))
	for round := range 2 { // the second round finds every passing answer held
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/round %d", tt.name, round), func(t *testing.T) {
				got, err := checkAnswerMemo([]byte(tt.answer), &memo)
				full, fullErr := checkAnswer([]byte(tt.answer))
				if tt.wantErr != "" {
					require.Error(t, err)
					assert.ErrorContains(t, err, tt.wantErr)
					assert.Equal(t, fullErr.Error(), err.Error(), "the same refusal as without the memo")
					assert.False(t, memo.holds([]byte(tt.answer)), "a refused answer is never held")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, full, got, "the same response as without the memo")
				assert.True(t, memo.holds([]byte(tt.answer)))
			})
		}
	}
	got, err := checkAnswerMemo([]byte(valid), &memo)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// The memo is bounded: answers over answerMemoBytes are not held, and it
// never holds more than answerMemoEntries answers.
func TestAnswerMemoBounds(t *testing.T) {
	var memo answerMemo
	big := `{"verdict":"accepted","evidence":{"pad":"` + strings.Repeat("x", answerMemoBytes) + `"}}`
	_, err := checkAnswerMemo([]byte(big), &memo)
	require.NoError(t, err)
	assert.False(t, memo.holds([]byte(big)), "an answer over the size bound")
	for i := range 3 * answerMemoEntries {
		a := fmt.Sprintf(`{"verdict":"accepted","evidence":{"n":%d}}`, i)
		_, err := checkAnswerMemo([]byte(a), &memo)
		require.NoError(t, err)
		assert.True(t, memo.holds([]byte(a)), "the latest answer is held")
		assert.LessOrEqual(t, len(memo.m), answerMemoEntries)
	}
	var none *answerMemo
	assert.False(t, none.holds([]byte(`{}`)), "a nil memo holds nothing")
	none.add([]byte(`{}`))
}
