package subject_test

import (
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/host/subject"
)

func ExampleParseProposal() {
	msg := []byte(`{"role": "assistant", "tool_calls": [
		{"id": "call_1", "type": "function", "function": {"name": "list_issues", "arguments": "{\"owner\": \"octo-org\", \"repo\": \"widgets\"}"}},
		{"id": "call_2", "type": "function", "function": {"name": "create_issue", "arguments": "{\"owner\": \"octo-org\", \"title\": \"Flaky"}}
	]}`)
	p, format, err := subject.ParseProposal(msg, subject.FormatAuto)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(format)
	for _, a := range p.Actions {
		if a.ParseError != "" {
			fmt.Printf("%s %s: %s\n", a.ID, a.Tool, a.ParseError)
			continue
		}
		fmt.Printf("%s %s %s\n", a.ID, a.Tool, a.Parameters)
	}

	_, _, err = subject.ParseProposal([]byte(`{"role": "assistant", "content": "Done."}`), subject.FormatAuto)
	fmt.Println(errors.Is(err, subject.ErrNoToolCalls))
	// Output:
	// openai
	// call_1 list_issues {"owner": "octo-org", "repo": "widgets"}
	// call_2 create_issue: arguments is not valid JSON: unexpected end of JSON input at offset 37
	// true
}
