// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/threadcap/threadcap/output/hourfile"
)

func TestColumnsAreDocumented(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	types := map[string]bool{TypeBigint: true, TypeInteger: true, TypeVarchar: true, TypeTimestampTZ: true, TypeBoolean: true}
	seen := map[string]bool{}
	for _, c := range Columns {
		if !snake.MatchString(c.Name) {
			t.Errorf("column %q is not snake_case", c.Name)
		}
		if seen[c.Name] {
			t.Errorf("column %q appears twice", c.Name)
		}
		seen[c.Name] = true
		if !types[c.Type] {
			t.Errorf("column %q has type %q, not one DuckDB users are told about", c.Name, c.Type)
		}
		if (c.Unit == "µs") != strings.HasSuffix(c.Name, "_us") {
			t.Errorf("column %q with unit %q: microsecond columns, and only they, end in _us", c.Name, c.Unit)
		}
		if c.Meaning == "" || strings.ContainsAny(c.Meaning, "\n|") {
			t.Errorf("column %q needs a one-line meaning without |, got %q", c.Name, c.Meaning)
		}
	}
	if got, want := Header(), strings.Join(columnNames(), ",")+"\n"; got != want {
		t.Errorf("header %q, want %q", got, want)
	}
}

func columnNames() []string {
	var names []string
	for _, c := range Columns {
		names = append(names, c.Name)
	}
	return names
}

func TestMarkdownTable(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(MarkdownTable(), "\n"), "\n")
	if len(lines) != len(Columns)+2 {
		t.Fatalf("table has %d lines, want a header, a rule and %d columns", len(lines), len(Columns))
	}
	if lines[0] != "| column | type | unit | meaning |" {
		t.Errorf("table header is %q", lines[0])
	}
	for i, c := range Columns {
		line := lines[i+2]
		want := "| " + c.Name + " | " + c.Type + " | " + c.Unit + " | "
		if !strings.HasPrefix(line, want) || strings.Count(line, " | ") != 3 {
			t.Errorf("row for %s is %q, want it to start %q with four cells", c.Name, line, want)
		}
	}
	if got := markdownCell("a|b`c"); got != "a\\|b\\`c" {
		t.Errorf("markdownCell escapes a|b`c as %q", got)
	}
}

func TestDuckDBColumns(t *testing.T) {
	got := DuckDBColumns()
	last := Columns[len(Columns)-1]
	if !strings.HasPrefix(got, "{'sample_time': 'TIMESTAMPTZ', 'pid': 'INTEGER', ") ||
		!strings.HasSuffix(got, ", '"+last.Name+"': '"+last.Type+"'}") || strings.Count(got, ": ") != len(Columns) {
		t.Errorf("DuckDBColumns() = %s", got)
	}
}

// TestReadmeColumnsMatchSchema keeps the README's column tables, which users read, equal to
// the schema the writer uses: the samples' and the io files'.
func TestReadmeColumnsMatchSchema(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ section, table, name string }{
		{"columns", MarkdownTable(), "schema.MarkdownTable()"},
		{"io-columns", IOMarkdownTable(), "schema.IOMarkdownTable()"},
		{"profile-columns", ProfileMarkdownTable(), "schema.ProfileMarkdownTable()"},
	} {
		begin, end := "<!-- "+tc.section+":begin", "<!-- "+tc.section+":end -->"
		text := string(readme)
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("README.md has no %q ... %q section", begin, end)
		}
		section := text[i:j]
		got := strings.TrimSpace(section[strings.Index(section, "\n")+1:])
		if want := strings.TrimSpace(tc.table); got != want {
			t.Errorf("README.md's %s table differs from %s; paste:\n%s", tc.section, tc.name, want)
		}
	}
}

// TestEveryKindHasAHeader keeps a new kind of hour file from being written headerless.
func TestEveryKindHasAHeader(t *testing.T) {
	for _, k := range hourfile.Kinds() {
		if KindHeader(k) == "" {
			t.Errorf("no header for %sfiles", k.Prefix())
		}
	}
}
