// SPDX-License-Identifier: Apache-2.0

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxConfigBytes bounds what is read of a config file: a real one is a few KiB, and a
// bigger one is a mistake (or an attack) better refused before parsing.
const maxConfigBytes = 1 << 20

// ReadFile overlays the YAML file at path on cfg. Every mistake in it is reported
// at once, each with the file, line and key. After an error about a value, cfg holds the
// rest of the file, so that Validate can report the other mistakes too.
func ReadFile(path string, cfg *Config) error {
	data, err := readBounded(path)
	if err != nil {
		return err
	}
	return parseConfig(path, data, cfg)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("config %s is larger than %d bytes: is it the right file?", path, maxConfigBytes)
	}
	return data, nil
}

// parseConfig overlays data, the contents of the file name, on cfg.
func parseConfig(name string, data []byte, cfg *Config) error {
	if !isText(data) {
		return fmt.Errorf("config %s is not a UTF-8 text file: is it the right file?", name)
	}
	// First as a node tree: this refuses what yaml would accept but a config must not
	// have (aliases, several documents), and maps each line to its key for the messages.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil // empty, or only comments: the defaults stand
	} else if err != nil {
		return syntaxError(name, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s:%d: a second YAML document (---): put every setting in one", name, next.Line)
	}
	keys := map[int]string{}
	if err := indexKeys(name, &doc, "", keys, cfg); err != nil {
		return err
	}
	// Then into cfg, rejecting unknown keys.
	dec = yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(cfg)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		errs := make([]error, len(te.Errors))
		for i, msg := range te.Errors {
			errs[i] = explainTypeError(name, msg, keys, cfg)
		}
		return typeErrors(errs)
	}
	if err != nil {
		return syntaxError(name, err)
	}
	return nil
}

// typeErrors are the values of a file that could not be read; the rest of it was.
type typeErrors []error

func (e typeErrors) Error() string   { return errors.Join(e...).Error() }
func (e typeErrors) Unwrap() []error { return e }

// isText accepts UTF-8 without control characters other than tab, CR and LF.
func isText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, b := range data {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' || b == 0x7f {
			return false
		}
	}
	return true
}

// indexKeys checks the tree's shape, records for each line the key it holds (for the
// messages of the decoder, which only give lines), and where each key's value came from.
func indexKeys(name string, n *yaml.Node, path string, keys map[int]string, cfg *Config) error {
	switch {
	case n.Kind == yaml.AliasNode || n.Anchor != "":
		return fmt.Errorf("%s:%d: %s: YAML anchors and aliases (& and *) are not supported in the config: write the values out", name, n.Line, orTop(path))
	case n.Kind == yaml.DocumentNode:
		if len(n.Content) == 1 && n.Content[0].Kind != yaml.MappingNode && n.Content[0].Tag != "!!null" {
			return fmt.Errorf("%s:%d: the config must be a mapping of keys, like \"hz: 1\"", name, n.Content[0].Line)
		}
	case n.Kind == yaml.MappingNode:
		seen := map[string]int{}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			// A key may hold a line break ("? 0\n\n 0"): escaped, its messages stay one line.
			key := join(path, strings.ReplaceAll(k.Value, "\n", `\n`))
			if line, dup := seen[k.Value]; dup {
				errs = append(errs, fmt.Errorf("%s:%d: %s: set twice (also on line %d): keep one", name, k.Line, key, line))
			}
			seen[k.Value] = k.Line
			keys[k.Line] = key
			cfg.setOrigin(key, name+":"+strconv.Itoa(k.Line))
			errs = append(errs, indexKeys(name, v, key, keys, cfg))
		}
		return errors.Join(errs...)
	}
	var errs []error
	for i, c := range n.Content {
		p := path
		if n.Kind == yaml.SequenceNode {
			p = fmt.Sprintf("%s[%d]", path, i)
			if _, ok := keys[c.Line]; !ok {
				keys[c.Line] = p
			}
			cfg.setOrigin(p, name+":"+strconv.Itoa(c.Line))
		}
		errs = append(errs, indexKeys(name, c, p, keys, cfg))
	}
	return errors.Join(errs...)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

var (
	lineMsg    = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)
	unknownKey = regexp.MustCompile(`^field (\S+) not found in type`)
	wrongType  = regexp.MustCompile("(?s)^cannot unmarshal !!\\w+ `(.*)` into (\\S+)$")
	yamlLine   = regexp.MustCompile(`^yaml: line (\d+): `)
)

// goTypeWords says in the user's words what a Go type of Config takes.
var goTypeWords = map[string]string{
	"float64": "a number", "uint32": "a whole number", "int32": "a whole number",
	"bool": "true or false", "string": "a string", "[]int32": "a list of pids",
	"[]string": "a list of strings",
}

// explainTypeError turns one of the decoder's messages ("line 7: field fooo not found in
// type config.OutputConfig") into one naming the file, line and key.
func explainTypeError(name, msg string, keys map[int]string, cfg *Config) error {
	// The decoder names such a key as it is (see indexKeys).
	msg = strings.ReplaceAll(msg, "\n", `\n`)
	m := lineMsg.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%s: %s", name, msg)
	}
	line, _ := strconv.Atoi(m[1])
	key, text := orTop(keys[line]), m[2]
	cfg.setUndecoded(key)
	if unknownKey.MatchString(text) {
		parent, _ := splitKey(key)
		text = "unknown key: use one of " + strings.Join(knownKeys(parent), ", ")
	} else if w := wrongType.FindStringSubmatch(text); w != nil {
		want, ok := goTypeWords[w[2]]
		if !ok {
			want = "a mapping of keys"
		}
		text = fmt.Sprintf("%q is not %s", w[1], want)
	}
	return fmt.Errorf("%s:%s: %s: %s", name, m[1], key, text)
}

// splitKey splits "output.max_age" into "output" and "max_age".
func splitKey(key string) (parent, last string) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// knownKeys lists the keys the mapping at path takes, from Config's yaml tags.
func knownKeys(path string) []string {
	t := reflect.TypeOf(Config{})
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		f, ok := fieldByTag(t, part)
		if !ok || f.Type.Kind() != reflect.Struct {
			return nil
		}
		t = f.Type
	}
	var keys []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("yaml"); tag != "" {
			keys = append(keys, tag)
		}
	}
	return keys
}

func fieldByTag(t reflect.Type, tag string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") == tag {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// syntaxError makes "yaml: line 3: did not find expected key" read "FILE:3: did not find
// expected key", like the other messages.
func syntaxError(name string, err error) error {
	msg := err.Error()
	if yamlLine.MatchString(msg) {
		return fmt.Errorf("%s:%s", name, strings.TrimPrefix(msg, "yaml: line "))
	}
	return fmt.Errorf("%s: %s", name, msg)
}
