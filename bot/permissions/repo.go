package permissions

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"syscall"

	"github.com/signoff/signoff/bot"
)

// RepoFile is where a repository keeps rules that tighten a persona's.
const RepoFile = ".signoff/permissions.yaml"

// RepoRules are the rules of the nearest .signoff/permissions.yaml at or
// above a call's cwd. The file is in the agent's reach, so only its deny
// and ask rules apply.
type RepoRules struct {
	File  string
	Rules []bot.Rule
	// Problem says why the file could not be used; its rules are then
	// one "ask" for everything (a broken file tightens, never loosens).
	Problem string
}

// FindRepoRules looks for RepoFile in cwd and each directory above it.
// It opens only regular files, without following a symlink at the file
// itself and without blocking (a FIFO put there by the agent cannot hang
// the gateway). None found is nil.
func FindRepoRules(cwd string) *RepoRules {
	if cwd == "" || !path.IsAbs(cwd) {
		return nil
	}
	dir := path.Clean(cwd)
	for range 64 {
		file := path.Join(dir, RepoFile)
		if data, err := readRegular(file); err == nil {
			rules, ps := ParseFile(file, data)
			if len(ps) > 0 {
				return broken(file, ps[0].String(file))
			}
			return &RepoRules{File: file, Rules: rules}
		} else if !errors.Is(err, os.ErrNotExist) {
			return broken(file, err.Error())
		}
		if dir == "/" {
			break
		}
		dir = path.Dir(dir)
	}
	return nil
}

func broken(file, why string) *RepoRules {
	return &RepoRules{File: file, Problem: why, Rules: []bot.Rule{{Tool: "*", Pattern: "*", Effect: bot.EffectAsk, Where: file + " (unreadable: everything asks)"}}}
}

func readRegular(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, errors.New("is a symbolic link; not read")
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("is not a regular file; not read")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxRepoFile+1))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// String is the problem as "file:line:col: message".
func (p Problem) String(file string) string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", file, p.Line, p.Column, p.Message)
	}
	return file + ": " + p.Message
}
