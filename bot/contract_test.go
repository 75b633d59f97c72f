package bot_test

import (
	"context"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/adapters/discord"
	"github.com/signoff/signoff/adapters/nostr"
	"github.com/signoff/signoff/adapters/slack"
	"github.com/signoff/signoff/bot"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// The contract: every backend the gateway runs on is the whole of the
// interface it fills. A backend that lacks a capability stops this file
// compiling, rather than the gateway finding out at run time.
var (
	_ bot.Store    = (*qredis.Store)(nil)
	_ bot.Outbox   = (*qredis.Store)(nil)
	_ bot.Signer   = (*signing.Key)(nil)
	_ bot.AuditLog = (*signing.AuditLog)(nil)
	_ bot.Channel  = (*slack.Adapter)(nil)
	_ bot.Channel  = (*discord.Adapter)(nil)
	_ bot.Channel  = (*nostr.Adapter)(nil)
)

// TestContractHoldsEveryCapability: each capability the gateway once
// discovered by a type assertion is part of a required interface, so no
// backend can leave it out.
func TestContractHoldsEveryCapability(t *testing.T) {
	of := func(p any) reflect.Type { return reflect.TypeOf(p).Elem() }
	cases := []struct {
		whole reflect.Type
		parts []reflect.Type
	}{
		{of((*bot.Store)(nil)), []reflect.Type{
			of((*bot.NoticeStore)(nil)), of((*bot.SnapshotStore)(nil)), of((*bot.Notifier)(nil)),
			of((*bot.NudgeStore)(nil)), of((*bot.ChangeStore)(nil)), of((*bot.HoldStore)(nil)),
			of((*bot.ReceiptStore)(nil)), of((*bot.DecisionConfirmer)(nil)), of((*bot.AuditedVoteStore)(nil)),
			of((*bot.DecisionAuditStore)(nil)), of((*bot.AuditPreparer)(nil)),
		}},
		{of((*bot.Signer)(nil)), []reflect.Type{of((*bot.Notary)(nil))}},
		{of((*bot.Channel)(nil)), []reflect.Type{of((*bot.Publisher)(nil))}},
		{of((*bot.Outbox)(nil)), []reflect.Type{of((*bot.OutboxSweeper)(nil))}},
		{of((*bot.AuditLog)(nil)), []reflect.Type{of((*bot.CommitAuditor)(nil)), of((*bot.BatchAuditor)(nil))}},
	}
	for _, c := range cases {
		for _, part := range c.parts {
			if !c.whole.Implements(part) {
				t.Errorf("bot.%s does not require bot.%s: a backend may leave it out", c.whole.Name(), part.Name())
			}
		}
	}
}

// TestEngineDiscoversNothingByTypeAssertion: no engine file asks at run
// time whether a part it was given has a capability (x.(SomeInterface)),
// which is how a store used to seal no receipts without a word.
func TestEngineDiscoversNothingByTypeAssertion(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	ifaces := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.InterfaceType); ok {
					ifaces[ts.Name.Name] = true
				}
			}
			return true
		})
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			ta, ok := n.(*ast.TypeAssertExpr)
			if !ok || ta.Type == nil { // nil: a type switch's x.(type)
				return true
			}
			if id, ok := ta.Type.(*ast.Ident); ok && ifaces[id.Name] {
				t.Errorf("%s: asks whether a part is a bot.%s at run time; make it a method of a required interface, or a field", fset.Position(ta.Pos()), id.Name)
			}
			return true
		})
	}
}

// TestStoreMissingACapabilityDoesNotCompile builds, for each method of
// bot.Store, a store with every other method, and type-checks it as a
// bot.Store with the compiler's own export data: each must be refused,
// the missing method named.
func TestStoreMissingACapabilityDoesNotCompile(t *testing.T) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, file, _ := strings.Cut(line, "=")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	botPkg, err := imp.Import("github.com/signoff/signoff/bot")
	if err != nil {
		t.Fatal(err)
	}
	store := botPkg.Scope().Lookup("Store").Type().Underlying().(*types.Interface)
	qual := func(p *types.Package) string { return p.Name() }
	check := func(skip string) error {
		var src strings.Builder
		src.WriteString("package partial\nimport (\n\"context\"\n\"encoding/json\"\n\"time\"\n\"github.com/signoff/signoff/bot\"\n)\n")
		src.WriteString("var _ context.Context\nvar _ json.RawMessage\nvar _ time.Time\ntype partial struct{}\n")
		for i := range store.NumMethods() {
			m := store.Method(i)
			if m.Name() == skip {
				continue
			}
			sig := types.TypeString(m.Type(), qual)
			src.WriteString("func (partial) " + m.Name() + strings.TrimPrefix(sig, "func") + " { panic(0) }\n")
		}
		src.WriteString("var _ bot.Store = partial{}\n")
		f, err := parser.ParseFile(fset, "partial.go", src.String(), 0)
		if err != nil {
			t.Fatalf("generated store does not parse: %v\n%s", err, src.String())
		}
		_, err = (&types.Config{Importer: imp}).Check("partial", fset, []*ast.File{f}, nil)
		return err
	}
	if err := check(""); err != nil {
		t.Fatalf("a store with every method is refused: %v", err)
	}
	if store.NumMethods() < 25 {
		t.Errorf("bot.Store has %d methods; the contract lost capabilities", store.NumMethods())
	}
	for i := range store.NumMethods() {
		name := store.Method(i).Name()
		err := check(name)
		if err == nil || !strings.Contains(err.Error(), "missing method "+name) {
			t.Errorf("a store without %s: got %v, want a compile error naming it", name, err)
		}
	}
}

// TestGatewayRefusesToStartWithoutARequiredPart: a gateway missing a
// required part, or given a nil pointer for an optional one, does not
// start, and says which part.
func TestGatewayRefusesToStartWithoutARequiredPart(t *testing.T) {
	// Never contacted: a gateway refused at start reaches nothing.
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rdb.Close() })
	store, key := qredis.New(rdb, "contract"), signing.NewKey()
	var nilStore *qredis.Store
	var nilLog *signing.AuditLog
	var nilSlack *slack.Adapter
	cases := []struct {
		name string
		g    *bot.Gateway
		want string
	}{
		{"no store", &bot.Gateway{Signer: key}, "Store"},
		{"a nil store", &bot.Gateway{Store: nilStore, Signer: key}, "Store"},
		{"no signer", &bot.Gateway{Store: store}, "Signer"},
		{"a nil audit log", &bot.Gateway{Store: store, Signer: key, Audit: nilLog}, "Audit"},
		{"a nil outbox", &bot.Gateway{Store: store, Signer: key, Outbox: nilStore}, "Outbox"},
		{"a platform with no adapter", &bot.Gateway{Store: store, Signer: key, Channels: map[bot.Platform]bot.Channel{bot.Slack: nilSlack}}, "Channel for slack"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.Start(context.Background())
			if err == nil {
				c.g.Close()
				t.Fatal("started")
			}
			if bot.ErrorCode(err) != bot.EInvalid || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an invalid-gateway error naming %s", err, c.want)
			}
			if n := c.g.Subscribed(); n != 0 {
				t.Errorf("refused gateway subscribed %d times", n)
			}
		})
	}
}
