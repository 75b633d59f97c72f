package risk

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/signoff/signoff/configs/rules"
)

// Pack is one rules file: a family of programs (git, containers, aws …)
// in the rules format (configs/rules/core.yaml documents it), with its name (`pack:`) giving its rules' ids.
type Pack struct {
	File string // the file name, e.g. git.yaml
	Data []byte
}

// DefaultPacks returns the embedded packs (configs/rules/*.yaml), sorted
// by file name.
func DefaultPacks() []Pack {
	ps, err := readPacks(rules.Packs, ".")
	if err != nil {
		panic("embedded risk packs: " + err.Error()) // the binary was built wrong
	}
	return ps
}

func readPacks(fsys fs.FS, dir string) ([]Pack, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Pack
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Pack{File: e.Name(), Data: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}

// LoadRules reads rules from a path. A directory holds packs: each
// *.yaml file replaces the embedded pack of the same file name, or adds a
// pack. A single file replaces all the embedded packs.
func LoadRules(file string) (*Rules, error) {
	st, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("load risk rules: %w", err)
	}
	if st.IsDir() {
		own, err := readPacks(os.DirFS(file), ".")
		if err != nil {
			return nil, fmt.Errorf("load risk rules %s: %w", file, err)
		}
		if len(own) == 0 {
			return nil, fmt.Errorf("load risk rules %s: no *.yaml packs in the directory", file)
		}
		byName := map[string]Pack{}
		for _, p := range DefaultPacks() {
			byName[p.File] = p
		}
		for _, p := range own {
			byName[p.File] = p
		}
		all := make([]Pack, 0, len(byName))
		for _, p := range byName {
			all = append(all, p)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].File < all[j].File })
		r, err := ParsePacks(all)
		if err != nil {
			return nil, fmt.Errorf("load risk rules %s: %w", file, err)
		}
		return r, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load risk rules: %w", err)
	}
	r, err := ParseRules(b)
	if err != nil {
		return nil, fmt.Errorf("load risk rules %s: %w", file, err)
	}
	return r, nil
}

// ParseRules parses and checks one rules file in the packs' format
// (all packs in one). Unknown fields, unknown levels and a program named
// in two sections are errors.
func ParseRules(data []byte) (*Rules, error) {
	return ParsePacks([]Pack{{File: "rules.yaml", Data: data}})
}

// ParsePacks parses packs and merges them into one set of rules: lists
// are joined, and a name (program, wrapper, tool …) given by two packs is
// an error naming both.
func ParsePacks(packs []Pack) (*Rules, error) {
	acc, err := mergePacks(packs)
	if err != nil {
		return nil, err
	}
	if err := acc.compile(); err != nil {
		return nil, err
	}
	return acc, nil
}

// mergePacks parses packs and merges them, uncompiled: the form
// packs_gen.go holds for the embedded packs.
func mergePacks(packs []Pack) (*Rules, error) {
	var acc Rules
	acc.origin = map[string]string{}
	for _, p := range packs {
		var r Rules
		if err := yaml.UnmarshalWithOptions(p.Data, &r, yaml.Strict()); err != nil {
			return nil, fmt.Errorf("%s: parse: %w", p.File, err)
		}
		name := r.Pack
		if name == "" {
			name = strings.TrimSuffix(p.File, ".yaml")
		}
		if err := mergeRules(&acc, &r, name); err != nil {
			return nil, fmt.Errorf("%s: %w", p.File, err)
		}
	}
	acc.Pack = ""
	return &acc, nil
}

// mergeRules adds src (from pack) into dst: maps by key (a key in both is
// an error), slices appended, nested sections merged, and single values
// (levels, limits) taken from the pack that sets them.
func mergeRules(dst, src *Rules, pack string) error {
	for _, m := range []map[string]bool{
		keySet(src.Programs), keySet(src.Wrappers), keySet(src.Interpreters), keySet(src.Dangerous),
		keySet(src.SQL.Clients), keySet(src.KV.Clients), keySet(src.Tools),
	} {
		for k := range m {
			if prev, ok := dst.origin[k]; ok && prev != pack {
				// mergeValue reports it with the section; remember the first pack
				continue
			}
			dst.origin[k] = pack
		}
	}
	for _, n := range src.Shells.Names {
		dst.origin[n] = pack
	}
	for _, n := range src.Safe {
		dst.origin[n] = pack
	}
	for _, n := range src.Caution {
		dst.origin[n] = pack
	}
	for i := range src.Paths.Writes.Dangerous {
		if src.Paths.Writes.Dangerous[i].ID == "" {
			src.Paths.Writes.Dangerous[i].ID = fmt.Sprintf("%s:writes-%d", pack, i+1)
		}
	}
	return mergeValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem(), "")
}

func keySet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func mergeValue(dst, src reflect.Value, where string) error {
	switch src.Kind() {
	case reflect.Struct:
		if src.Type() == reflect.TypeOf(Program{}) {
			if !src.IsZero() {
				dst.Set(src)
			}
			return nil
		}
		t := src.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if err := mergeValue(dst.Field(i), src.Field(i), strings.TrimPrefix(where+"."+tag, ".")); err != nil {
				return err
			}
		}
	case reflect.Map:
		if src.Len() == 0 {
			return nil
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(src.Type()))
		}
		iter := src.MapRange()
		for iter.Next() {
			if dst.MapIndex(iter.Key()).IsValid() {
				return fmt.Errorf("%s.%v is given by two packs", where, iter.Key())
			}
			dst.SetMapIndex(iter.Key(), iter.Value())
		}
	case reflect.Slice:
		if src.Len() > 0 {
			dst.Set(reflect.AppendSlice(dst, src))
		}
	default:
		if !src.IsZero() {
			dst.Set(src)
		}
	}
	return nil
}
