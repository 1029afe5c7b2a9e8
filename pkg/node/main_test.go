package node

import (
	"testing"

	"github.com/chatd/chatd/internal/testpg"
)

func TestMain(m *testing.M) { testpg.Main(m) }
