package main

import (
	"bytes"
	"strings"
	"testing"
)

// --help prints on stdout, so it can be piped; a flag chatload does not
// know prints its error and the usage on stderr and exits 2.
func TestHelpGoesToStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-scenario") || errOut.Len() > 0 {
		t.Errorf("chatload --help: exit %d, %d bytes on stdout, %d on stderr; want the usage on stdout only", code, out.Len(), errOut.Len())
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"--no-such-flag"}, &out, &errOut); code != 2 || out.Len() > 0 || !strings.Contains(errOut.String(), "no-such-flag") {
		t.Errorf("chatload --no-such-flag: exit %d, stdout %q, stderr %d bytes; want exit 2 and the error on stderr", code, out.String(), errOut.Len())
	}
}
