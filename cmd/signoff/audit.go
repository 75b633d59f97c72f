package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	signoffnostr "github.com/signoff/signoff/adapters/nostr"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

func init() { commands["audit"] = audit }

const auditUsage = "usage: signoff audit verify [--signer NPUB] [--checkpoint FILE] [--witness RELAY]… [PATH|-]\n       signoff audit export [--out PATH]"

func audit(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 {
		return a.failf("%s", auditUsage)
	}
	switch args[0] {
	case "verify":
		return auditVerify(ctx, a, args[1:])
	case "export":
		return auditExport(ctx, a, args[1:])
	}
	return a.failf("%s", auditUsage)
}

// auditSigner is the key the chain is held to: --signer, else the
// gateway's own (SIGNOFF_NOSTR_KEY, or the data dir's gateway.key).
func auditSigner(cfg *config, flag string) (string, error) {
	if flag != "" {
		pk, err := signing.ParsePublicKey(flag)
		if err != nil {
			return "", fmt.Errorf("--signer: %v", err)
		}
		return pk, nil
	}
	if cfg.NostrKey != "" {
		k, err := signing.ParseKey(string(cfg.NostrKey))
		if err != nil {
			return "", fmt.Errorf("SIGNOFF_NOSTR_KEY: %w", err)
		}
		return k.PublicKey(), nil
	}
	path := filepath.Join(cfg.DataDir, "gateway.key")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("no gateway key to hold the chain to (%v): pass --signer NPUB, the gateway's npub that `signoff serve` logs at start", err)
	}
	k, err := signing.ParseKey(string(b))
	if err != nil {
		return "", fmt.Errorf("gateway key %s: %w", path, err)
	}
	return k.PublicKey(), nil
}

func openStore(cfg *config) (*qredis.Store, func(), error) {
	rdb, err := qredis.Open(cfg.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	return qredis.New(rdb, "signoff"), func() { rdb.Close() }, nil
}

func auditVerify(ctx context.Context, a *app, args []string) int {
	fs := a.flags("audit verify", "audit verify [--signer NPUB] [--checkpoint FILE] [--witness RELAY]… [PATH|-]")
	signer := fs.String("signer", "", "the gateway key every checkpoint must be signed by (npub or hex; default: the gateway's own, from the data dir)")
	cpPath := fs.String("checkpoint", "", "a published checkpoint the chain must reach (default: PATH.checkpoint when it exists)")
	var relays stringList
	fs.Var(&relays, "witness", "a Nostr relay (ws://…, wss://…) holding the gateway's witnessed checkpoint; repeat for several")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	path := fs.Arg(0)
	if path == "" {
		path = cfg.AuditPath
	}
	want, err := auditSigner(cfg, *signer)
	if err != nil {
		return a.fail(err)
	}
	opt := signing.VerifyOptions{Signer: want, Export: !sameFile(path, cfg.AuditPath)}
	// The witnesses: the newest checkpoint each holds. A log cut shorter
	// than one, or different at its height, is reported.
	var targets []signing.WitnessTarget
	if own, _ := auditSigner(cfg, ""); own == want {
		// The data dir's witness is this gateway's: it holds a chain of
		// another key (--signer) to nothing.
		targets = append(targets, signing.FileWitness{Path: witnessFile(cfg)})
	}
	for _, r := range relays {
		targets = append(targets, signing.RelayWitness{URL: r, Dial: signoffnostr.DialRelay})
	}
	// The store's head first: records added while the file is read are
	// after it, so they cannot make a good chain look cut short.
	if cfg.RedisURL != "" {
		store, done, err := openStore(cfg)
		if err != nil {
			return a.fail(err)
		}
		defer done()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		seq, hash, err := store.AuditHead(sctx)
		cancel()
		if err != nil {
			return a.failf("cannot read the store's audit head (SIGNOFF_REDIS_URL): %v", err)
		}
		opt.Expect = append(opt.Expect, signing.Head{Seq: seq, Hash: hash, Source: "the store's head"})
		targets = append(targets, store.AuditWitness())
	}
	for _, t := range targets {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		w, ok, err := t.Newest(wctx, want)
		cancel()
		switch {
		case err != nil && slices.Contains(relays, strings.TrimPrefix(t.Name(), "the relay ")):
			return a.failf("cannot read the witness on %s: %v", t.Name(), err)
		case err != nil:
			fmt.Fprintf(a.stdout, "BROKEN: %s: %v\n", t.Name(), err)
			return 1
		case ok:
			w.Source = "the checkpoint witnessed by " + t.Name()
			opt.Expect = append(opt.Expect, w.Head)
		}
	}
	explicit := *cpPath != ""
	if !explicit && path != "-" {
		*cpPath = path + ".checkpoint"
	}
	if *cpPath != "" {
		b, err := os.ReadFile(*cpPath)
		switch {
		case err == nil:
			h, err := signing.ParseCheckpoint(b, want)
			if err != nil {
				fmt.Fprintf(a.stdout, "BROKEN: published checkpoint %s: %v\n", *cpPath, err)
				return 1
			}
			h.Source = "the published checkpoint " + *cpPath
			opt.Expect = append(opt.Expect, h)
		case explicit || !errors.Is(err, os.ErrNotExist):
			return a.failf("cannot read the checkpoint: %v", err)
		}
	}
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return a.failf("cannot open the audit log: %v", err)
		}
		defer f.Close()
		in = f
	}
	rep := signing.VerifyChain(in, opt)
	if rep.Err != nil {
		return a.failf("reading %s: %v", path, rep.Err)
	}
	for _, t := range rep.Tears {
		fmt.Fprintf(a.stdout, "TORN: %s: %s (skipped; the records after it are still checked)\n", path, t.Error())
	}
	if rep.Break != nil {
		fmt.Fprintf(a.stdout, "BROKEN: %s: %s\n", path, rep.Break.Error())
		fmt.Fprintf(a.stdout, "%d record(s) before it are intact\n", rep.Records)
		return 1
	}
	bad := false
	if f := rep.Fork; f != nil {
		bad = true
		if rep.SignedFork {
			fmt.Fprintf(a.stdout, "FORK: %s: seq %d %s: two different records at one height, both under the gateway's signature (the log was cut and written again)\n", path, f.Seq, f.Reason)
		} else {
			fmt.Fprintf(a.stdout, "TRUNCATED: %s: seq %d %s (the log disagrees with its witness)\n", path, f.Seq, f.Reason)
		}
		for _, h := range opt.Expect {
			if h.Seq >= f.Seq {
				fmt.Fprintf(a.stdout, "TRUNCATED: %s: the %d record(s) %s vouches for from seq %d to %d are not in this log\n", path, h.Seq-f.Seq+1, h.Source, f.Seq, h.Seq)
				break
			}
		}
	}
	for _, t := range rep.Truncated {
		bad = true
		fmt.Fprintf(a.stdout, "TRUNCATED: %s: %s\n", path, t)
	}
	if bad {
		return 1
	}
	fmt.Fprintf(a.stdout, "ok: %s: %d record(s), chain intact, %d checkpoint(s) signed by %s\n", path, rep.Records, rep.Checkpoints, want)
	if rep.Export != nil {
		fmt.Fprintf(a.stdout, "export: held to its own head, seq %d", rep.Export.Seq)
		if len(rep.Newer) > 0 {
			fmt.Fprintf(a.stdout, " (the chain has grown since: %s is at seq %d)", rep.Newer[0].Source, rep.Newer[0].Seq)
		}
		fmt.Fprintln(a.stdout)
	}
	if rep.Uncovered > 0 {
		fmt.Fprintf(a.stdout, "note: the last %d record(s) (after seq %d) are not yet covered by a signed checkpoint; they are hash-linked only\n", rep.Uncovered, rep.Covered)
	}
	if len(opt.Expect) == 0 {
		fmt.Fprintf(a.stdout, "note: no witness, published checkpoint or store head to compare with, so a log cut short at a checkpoint would look whole (pass --witness RELAY)\n")
	}
	return 0
}

// sameFile reports whether a and b name one file (the gateway's own log
// is never read as an export).
func sameFile(a, b string) bool {
	if a == "-" {
		return false
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return os.SameFile(fa, fb)
}

func auditExport(ctx context.Context, a *app, args []string) int {
	fs := a.flags("audit export", "audit export [--out PATH]")
	out := fs.String("out", "", "write the chain to this file (default: standard output)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.failf("audit export takes no arguments (use --out PATH)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return a.fail(err)
	}
	var w io.Writer = a.stdout
	var tmp *os.File
	if *out != "" {
		if tmp, err = os.CreateTemp(filepath.Dir(*out), ".audit-export-*"); err != nil {
			return a.failf("cannot write %s: %v", *out, err)
		}
		defer os.Remove(tmp.Name())
		w = tmp
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var n uint64
	var head *signing.Head // the last record exported
	if cfg.RedisURL == "" {
		// The embedded store dies with the gateway: the file is the chain.
		f, err := os.Open(cfg.AuditPath)
		if err != nil {
			return a.failf("cannot open the audit log (set SIGNOFF_REDIS_URL to export the store's chain): %v", err)
		}
		defer f.Close()
		c, err := io.Copy(bw, f)
		if err != nil {
			return a.failf("export: %v", err)
		}
		if _, err := f.Seek(0, 0); err == nil {
			if rep := signing.VerifyChain(f, signing.VerifyOptions{}); rep.Err == nil && rep.Break == nil {
				head = &signing.Head{Seq: rep.Last, Hash: rep.Head}
			}
		}
		fmt.Fprintf(a.stderr, "exported %s (%d bytes) from %s\n", dest(*out), c, cfg.AuditPath)
	} else {
		store, done, err := openStore(cfg)
		if err != nil {
			return a.fail(err)
		}
		defer done()
		seeded, err := store.AuditSeeded(ctx)
		if err != nil {
			return a.fail(err)
		}
		if seeded > 0 {
			// The store began at seq seeded+1 (it was empty when a gateway
			// with a longer file started): the start comes from that file.
			if n, err = copyFilePrefix(bw, cfg.AuditPath, seeded); err != nil {
				return a.failf("the store's chain starts after seq %d and the earlier records must come from the local log: %v", seeded, err)
			}
		}
		last := time.Now()
		for {
			lines, err := store.AuditRecords(ctx, n, 1000)
			if err != nil {
				return a.fail(err)
			}
			for _, l := range lines {
				var r signing.Record
				if json.Unmarshal(l, &r) == nil {
					head = &signing.Head{Seq: r.Seq, Hash: r.Hash}
				}
				bw.Write(l)
				bw.WriteByte('\n')
				n++
			}
			if time.Since(last) > 2*time.Second {
				fmt.Fprintf(a.stderr, "exported %d records…\n", n)
				last = time.Now()
			}
			if len(lines) < 1000 {
				break
			}
		}
		if *out == "" {
			fmt.Fprintf(a.stderr, "exported %d record(s) to standard output; check them with `signoff audit verify FILE` on the file you keep them in, or pipe them to `signoff audit verify -`\n", n)
		} else {
			fmt.Fprintf(a.stderr, "exported %d record(s) to %s; check it with `signoff audit verify %s`\n", n, *out, *out)
		}
	}
	if head != nil {
		// The head as of the export: verify holds the export to it, not to
		// the fleet's head, which moves on.
		var tr signing.ExportTrailer
		tr.Export.Seq, tr.Export.Hash, tr.Export.At = head.Seq, head.Hash, time.Now().UTC().Format(time.RFC3339)
		b, _ := json.Marshal(tr)
		bw.Write(append(b, '\n'))
	}
	if err := bw.Flush(); err != nil {
		return a.failf("export: %v", err)
	}
	if tmp != nil {
		if err := tmp.Close(); err != nil {
			return a.failf("export: %v", err)
		}
		if err := os.Rename(tmp.Name(), *out); err != nil {
			return a.failf("export: %v", err)
		}
	}
	return 0
}

func dest(out string) string {
	if out == "" {
		return "standard output"
	}
	return out
}

// copyFilePrefix writes the records of the log at path up to seq.
func copyFilePrefix(w io.Writer, path string, seq uint64) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n uint64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() && n < seq {
		line := bytes.TrimSpace(sc.Bytes())
		var r signing.Record
		if json.Unmarshal(line, &r) != nil || r.Seq != n+1 {
			continue // a torn line
		}
		w.Write(line)
		w.Write([]byte("\n"))
		n++
	}
	if n < seq {
		return n, fmt.Errorf("%s holds only %d record(s)", path, n)
	}
	return n, sc.Err()
}
