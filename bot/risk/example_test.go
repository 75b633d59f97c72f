package risk_test

import (
	"encoding/json"
	"fmt"

	"github.com/signoff/signoff/bot/risk"
)

func Example() {
	c := risk.Default()

	a := c.Command(`git status && bash -c 'r""m -rf ~'`)
	fmt.Println(a.Level, a.Reasons)

	a = c.Command("go vet ./... 2>&1 | tail -5")
	fmt.Println(a.Level, a.Reasons)

	a = c.ToolCall("Read", json.RawMessage(`{"file_path":"/home/alice/.ssh/id_ed25519"}`), "/home/alice/proj")
	fmt.Println(a.Level, a.Reasons)
	// Output:
	// dangerous [recursive delete of a root, home, or wildcard path [core.filesystem:rm-delete]]
	// safe []
	// dangerous [reads a sensitive path (/home/alice/.ssh/id_ed25519)]
}
