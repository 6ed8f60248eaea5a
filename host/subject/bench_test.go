package subject

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// tenActions renders the same 10-call plan in each format.
func tenActions() map[Format][]byte {
	var native, mcp, openai, anthropic []string
	for i := range 10 {
		args := fmt.Sprintf(`{"owner":"octo-org","repo":"widgets","title":"Issue %d","body":"Body of issue %d, long enough to be realistic."}`, i, i)
		quoted, _ := json.Marshal(args)
		native = append(native, fmt.Sprintf(`{"id":"a%d","type":"tool_call","tool":"create_issue","parameters":%s,"expected_effects":{"issue.%d":true},"depends_on":[%d]}`, i, args, i, max(i-1, 0)))
		mcp = append(mcp, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_issue","arguments":%s}}`, i, args))
		openai = append(openai, fmt.Sprintf(`{"id":"call_%d","type":"function","function":{"name":"create_issue","arguments":%s}}`, i, quoted))
		anthropic = append(anthropic, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d","name":"create_issue","input":%s}`, i, args))
	}
	return map[Format][]byte{
		FormatNative:    []byte(`{"id":"bench","actions":[` + strings.Join(native, ",") + `]}`),
		FormatMCP:       []byte(`[` + strings.Join(mcp, ",") + `]`),
		FormatOpenAI:    []byte(`{"role":"assistant","content":null,"tool_calls":[` + strings.Join(openai, ",") + `]}`),
		FormatAnthropic: []byte(`{"role":"assistant","content":[{"type":"text","text":"Filing."},` + strings.Join(anthropic, ",") + `]}`),
	}
}

func BenchmarkParseProposal(b *testing.B) {
	inputs := tenActions()
	for _, f := range []Format{FormatNative, FormatMCP, FormatOpenAI, FormatAnthropic} {
		data := inputs[f]
		b.Run(string(f), func(b *testing.B) {
			if p, got, err := ParseProposal(data, FormatAuto); err != nil || got != f || len(p.Actions) != 10 {
				b.Fatalf("ParseProposal: %v, %s, %d actions", err, got, len(p.Actions))
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = ParseProposal(data, FormatAuto)
			}
		})
	}
}
