package api_test

import (
	"slices"
	"testing"

	"github.com/chatd/chatd/pkg/api"
	"go.yaml.in/yaml/v3"
)

// No $ref in the document has siblings. OpenAPI 3.0 ignores them, and
// tools that read 3.1 documents the 3.0 way (Prism 5 merges them into the
// referenced schema instead) disagree with kin-openapi about what they
// mean, so a refinement of a shared schema must be written with allOf.
func TestOpenAPIRefHasNoSiblings(t *testing.T) {
	t.Parallel()
	var root yaml.Node
	if err := yaml.Unmarshal(api.OpenAPI(), &root); err != nil {
		t.Fatal(err)
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			var keys []string
			for i := 0; i+1 < len(n.Content); i += 2 {
				keys = append(keys, n.Content[i].Value)
			}
			if slices.Contains(keys, "$ref") && len(keys) > 1 {
				t.Errorf("openapi.yaml:%d: $ref with siblings %v; write the refinement with allOf", n.Line, keys)
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&root)
}
