package wire_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/wire"
)

// The names in this package are the contract's, letter for letter. The
// contract independent clients are written against is kept verbatim in
// testdata/contract.md (docs/protocol.md repeats its baseline and adds the
// implementation's details, but not v2 yet); the REST-only codes and 1001
// are documented in docs/protocol.md.

var (
	clientTypes = []wire.FrameType{wire.FrameSend, wire.FrameAck, wire.FrameRead, wire.FramePing,
		wire.FrameEdit, wire.FrameDelete, wire.FrameReact, wire.FrameTyping, wire.FrameAuth}
	serverTypes = []wire.FrameType{wire.FrameHello, wire.FrameAccepted, wire.FrameRejected, wire.FrameMsg,
		wire.FrameReceipt, wire.FramePong, wire.FramePresence, wire.FrameAuthed, wire.FrameTyping}
	kinds         = []wire.Kind{wire.KindMessage, wire.KindEdit, wire.KindDelete, wire.KindReaction}
	rejectedCodes = []wire.Code{wire.CodeOverloaded, wire.CodeRateLimited, wire.CodeForbidden,
		wire.CodeNotFound, wire.CodeInvalid, wire.CodeTooLarge}
	restOnlyCodes = []wire.Code{wire.CodeTooManyMembers, wire.CodeConflict, wire.CodeCIDConflict,
		wire.CodeUnavailable, wire.CodeUnauthorized, wire.CodeInternal}
	contractCloses = []wire.CloseCode{wire.CloseAbandoned, wire.CloseOverloaded, wire.CloseIdle,
		wire.CloseSuperseded, wire.CloseRate, wire.CloseProtocol, wire.CloseUnauthorized}
)

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the text of doc from the line starting with from up to
// the next line starting with to (or the end).
func section(t *testing.T, doc, from, to string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+from)
	if i < 0 {
		t.Fatalf("no %q in the document", from)
	}
	s := doc[i+1:]
	if j := strings.Index(s[1:], "\n"+to); j >= 0 {
		s = s[:j+1]
	}
	return s
}

var frameTypeRE = regexp.MustCompile(`\{"type":"([a-z_]+)"`)

// frameTypes lists the distinct frame types of the `frame` columns in text.
func frameTypes(text string) []string {
	var out []string
	for _, m := range frameTypeRE.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

func sortedStrings[T ~string](vs []T) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, string(v)) {
			out = append(out, string(v))
		}
	}
	slices.Sort(out)
	return out
}

func TestFrameTypesAreTheContracts(t *testing.T) {
	doc := readDoc(t, "testdata/contract.md")
	var client, server string
	for _, part := range strings.Split(doc, "Client → server")[1:] {
		c, s, ok := strings.Cut(part, "Server → client")
		if !ok {
			t.Fatal("a client table without a server table")
		}
		client += c
		server += section(t, "\n"+s, "", "\n#")
	}
	// The token refresh frames are named in prose: the client's first, then
	// the server's answer.
	token := section(t, doc, "### Token lifetime", "#")
	c, s, ok := strings.Cut(token, "answered")
	if !ok {
		t.Fatal("no token refresh answer in the contract")
	}
	client, server = client+c, server+s
	if got, want := sortedStrings(clientTypes), frameTypes(client); !slices.Equal(got, want) {
		t.Errorf("client frame types: got %v, want %v (the contract's)", got, want)
	}
	if got, want := sortedStrings(serverTypes), frameTypes(server); !slices.Equal(got, want) {
		t.Errorf("server frame types: got %v, want %v (the contract's)", got, want)
	}
}

func TestKindsAreTheContracts(t *testing.T) {
	line := section(t, readDoc(t, "testdata/contract.md"), "- `\"kind\"`", "- ")
	var want []string
	for _, m := range regexp.MustCompile("`\"([a-z]+)\"`").FindAllStringSubmatch(line, -1) {
		if m[1] != "kind" {
			want = append(want, m[1])
		}
	}
	slices.Sort(want)
	if got := sortedStrings(kinds); !slices.Equal(got, want) {
		t.Errorf("kinds: got %v, want %v (the contract's)", got, want)
	}
}

func TestRejectedCodesAreTheContracts(t *testing.T) {
	m := regexp.MustCompile(`\{"type":"rejected".*"code":"([a-z_\\|]+)"`).FindStringSubmatch(readDoc(t, "testdata/contract.md"))
	if m == nil {
		t.Fatal("no rejected frame in the contract")
	}
	want := strings.Split(m[1], `\|`)
	slices.Sort(want)
	if got := sortedStrings(rejectedCodes); !slices.Equal(got, want) {
		t.Errorf("rejected codes: got %v, want %v (the contract's)", got, want)
	}
	for _, c := range append(rejectedCodes, wire.CodeUnavailable) { // unavailable: an addition
		if !c.Temporary() != (c != wire.CodeOverloaded && c != wire.CodeRateLimited && c != wire.CodeUnavailable) {
			t.Errorf("%s.Temporary() = %v", c, c.Temporary())
		}
	}
}

func TestErrorCodesAreTheDocumented(t *testing.T) {
	line := section(t, readDoc(t, "../../docs/protocol.md"), "- Error codes", "- ")
	var want []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(line, -1) {
		if m[1] != "code" && m[1] != "max_body_bytes" && !slices.Contains(want, m[1]) {
			want = append(want, m[1])
		}
	}
	slices.Sort(want)
	if got := sortedStrings(append(slices.Clone(rejectedCodes), restOnlyCodes...)); !slices.Equal(got, want) {
		t.Errorf("error codes: got %v, want %v (docs/protocol.md's)", got, want)
	}
}

// Each close code reads as the contract's "Close codes:" line names it
// ("4000 abandoned", "4008 rate or credit violation"), and there is no code
// the line has that this package lacks.
func TestCloseCodesAreTheContracts(t *testing.T) {
	para := section(t, readDoc(t, "testdata/contract.md"), "Close codes:", "\n")
	for _, c := range contractCloses {
		if want := strconv.Itoa(int(c)) + " " + c.String(); !strings.Contains(para, want) {
			t.Errorf("close code %d: %q is not in the contract's %q", int(c), want, para)
		}
	}
	var want []int
	for _, m := range regexp.MustCompile(`\b(4\d\d\d)\b`).FindAllStringSubmatch(para, -1) {
		n, _ := strconv.Atoi(m[1])
		want = append(want, n)
	}
	var got []int
	for _, c := range contractCloses {
		got = append(got, int(c))
	}
	if !slices.Equal(got, want) {
		t.Errorf("close codes: got %v, want %v (the contract's)", got, want)
	}
	docs := readDoc(t, "../../docs/protocol.md")
	if want := "Close code 1001 (" + wire.CloseGoingAway.String() + ")"; !strings.Contains(docs, want) {
		t.Errorf("%q is not in docs/protocol.md", want)
	}
	if got := wire.CloseCode(4999).String(); got != "close 4999" {
		t.Errorf("an unknown code reads %q, want %q", got, "close 4999")
	}
}

// testdata/contract.md is a faithful copy: its baseline is docs/protocol.md's
// word for word (only the title differs), so a constant checked against it
// is checked against the project's own document too.
func TestContractCopyMatchesDocs(t *testing.T) {
	body := func(s string) string {
		_, rest, _ := strings.Cut(s, "\n")
		return strings.TrimSpace(rest)
	}
	contract, _, ok := strings.Cut(readDoc(t, "testdata/contract.md"), "## Events (v2)")
	if !ok {
		t.Fatal("no v2 section in testdata/contract.md")
	}
	docs, _, ok := strings.Cut(readDoc(t, "../../docs/protocol.md"), "\n---\n")
	if !ok {
		t.Fatal("no additions rule in docs/protocol.md")
	}
	if body(contract) != body(docs) {
		t.Error("testdata/contract.md's baseline differs from docs/protocol.md's: copy the contract again")
	}
}
