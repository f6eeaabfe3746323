package disk_test

import (
	"testing"

	"github.com/hummer-db/hummer/exec/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
