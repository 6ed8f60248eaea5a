package mcpgateway

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// nameSkeleton is what a name or text looks like to a person, the key
// under which two tool names count as the same name for namespacing and
// under which an upstream's text is compared with gatehost's markers: the
// Unicode confusable skeleton (UTS #39 §4, through
// github.com/mtibben/confusables, which carries Unicode's confusables.txt)
// of the case-folded text in compatibility form (NFKC: fullwidth and
// styled letters), without default-ignorable code points. So "read_file",
// "Read_File", "read_fiIe" with a capital I, Cyrillic "rеad_file",
// fullwidth "ｒead_file" and "read\u200b_file" share one skeleton, and tools
// of two upstreams with such names are both exposed as UPSTREAM.NAME.
func nameSkeleton(name string) string {
	visible := strings.Map(func(r rune) rune {
		if isInvisible(r) {
			return -1
		}
		return r
	}, norm.NFKC.String(name))
	// The skeleton before folding (capital I is a look-alike of l), and
	// again after (folding can make new look-alikes).
	return confusables.Skeleton(cases.Fold().String(confusables.Skeleton(visible)))
}

// isInvisible reports default-ignorable and format code points (zero
// widths, bidirectional controls, variation selectors): characters a
// person does not see but that make two names differ.
func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == '\u115f' || r == '\u1160' || r == '\u3164' || r == '\uffa0'
}

// badToolName says why an upstream's tool name is not exposed at all, or
// "" when it is acceptable: a name a person cannot read as it is —
// control or invisible characters, invalid UTF-8, or no visible
// character — could be shown as something it is not; and the name under
// which the trust baseline pins an upstream's instructions.
func badToolName(name string) string {
	switch name {
	case "":
		return "empty name"
	case baseline.InstructionsTool:
		return "the name the trust baseline keeps for the upstream's instructions"
	}
	if !utf8.ValidString(name) {
		return "not valid UTF-8"
	}
	visible := false
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return "control character in the name"
		case isInvisible(r):
			return "invisible or bidirectional control character in the name"
		case !unicode.IsSpace(r):
			visible = true
		}
	}
	if !visible {
		return "no visible character"
	}
	return ""
}
