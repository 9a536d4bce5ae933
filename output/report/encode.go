// SPDX-License-Identifier: Apache-2.0

package report

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/threadcap/threadcap/output/hourfile"
)

// jsonReport is the JSON form of a Result; field names match the CSV columns.
type jsonReport struct {
	From          time.Time    `json:"from"`
	To            time.Time    `json:"to"`
	Files         []string     `json:"files"`
	Ticks         int64        `json:"ticks"`
	Rows          int64        `json:"rows"`          // active sessions: what avg_threads counts
	InactiveRows  int64        `json:"inactive_rows"` // in cpu_seconds, not in rows or avg_threads
	ExitedRows    int64        `json:"exited_rows"`   // in cpu_seconds, not in rows or avg_threads
	AvgThreads    float64      `json:"avg_threads"`
	CPUSeconds    float64      `json:"cpu_seconds"`
	MalformedRows int64        `json:"malformed_rows"`
	DamagedFiles  []FileDamage `json:"damaged_files"`
	By            []string     `json:"by,omitempty"`
	Groups        []jsonGroup  `json:"groups,omitempty"`
	Other         *jsonGroup   `json:"other,omitempty"`
	Timeline      []jsonBucket `json:"timeline,omitempty"`
}

type jsonGroup struct {
	Values     map[string]string `json:"values,omitempty"`
	Groups     int               `json:"groups,omitempty"` // in "other" only: how many it sums
	Rows       int64             `json:"rows"`
	Inactive   int64             `json:"inactive_rows"`
	AvgThreads float64           `json:"avg_threads"`
	CPUSeconds float64           `json:"cpu_seconds"`
}

type jsonBucket struct {
	Start      time.Time          `json:"start"`
	Ticks      int64              `json:"ticks"`
	AvgThreads float64            `json:"avg_threads"`
	States     map[string]float64 `json:"states"` // average active threads of each kind (TimelineStates)
	CPUSeconds float64            `json:"cpu_seconds"`
}

func renderJSON(w io.Writer, r *Result) error {
	out := jsonReport{
		From: r.Window.From, To: r.Window.To, Files: r.Files, Ticks: r.Ticks, Rows: r.Rows, ExitedRows: r.Exited,
		InactiveRows: r.Inactive, AvgThreads: Average(r.Rows, r.Ticks), CPUSeconds: seconds(r.CPUUs),
		MalformedRows: r.Malformed, DamagedFiles: r.Damaged,
	}
	if out.DamagedFiles == nil {
		out.DamagedFiles = []FileDamage{}
	}
	if r.Step == 0 {
		out.By = r.By
		out.Groups = []jsonGroup{}
		for _, g := range r.Groups {
			values := map[string]string{}
			for i, name := range r.By {
				values[name] = g.Values[i]
			}
			out.Groups = append(out.Groups, jsonGroup{Values: values, Rows: g.Rows, Inactive: g.Inactive,
				AvgThreads: Average(g.Rows, r.Ticks), CPUSeconds: seconds(g.CPUUs)})
		}
		if r.Other.Count > 0 {
			out.Other = &jsonGroup{Groups: r.Other.Count, Rows: r.Other.Rows, Inactive: r.Other.Inactive,
				AvgThreads: Average(r.Other.Rows, r.Ticks), CPUSeconds: seconds(r.Other.CPUUs)}
		}
	}
	for _, bk := range r.Timeline {
		states := map[string]float64{}
		for i, name := range timelineStates {
			states[name] = Average(bk.Rows[i], bk.Ticks)
		}
		out.Timeline = append(out.Timeline, jsonBucket{Start: bk.Start, Ticks: bk.Ticks,
			AvgThreads: Average(sum(bk.Rows[:]), bk.Ticks), States: states, CPUSeconds: seconds(bk.CPUUs)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// renderCSV writes one line per group, or per bucket of a timeline. The groups past --top
// are left out: --top 0 lists them all. rows are a group's active sessions, inactive_rows
// its other rows but exited threads', as in JSON.
func renderCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	if r.Step > 0 {
		cw.Write(append(append([]string{"start", "ticks", "avg_threads"}, timelineStates[:]...), "cpu_seconds"))
		for _, bk := range r.Timeline {
			line := []string{bk.Start.Format(time.RFC3339), strconv.FormatInt(bk.Ticks, 10),
				number(Average(sum(bk.Rows[:]), bk.Ticks))}
			for _, n := range bk.Rows {
				line = append(line, number(Average(n, bk.Ticks)))
			}
			cw.Write(append(line, number(seconds(bk.CPUUs))))
		}
	} else {
		cw.Write(append(append([]string{}, r.By...), "avg_threads", "cpu_seconds", "rows", "inactive_rows"))
		for _, g := range r.Groups {
			line := make([]string, 0, len(g.Values)+3)
			for _, v := range g.Values {
				line = append(line, hourfile.Guard(v))
			}
			cw.Write(append(line, number(Average(g.Rows, r.Ticks)),
				number(seconds(g.CPUUs)), strconv.FormatInt(g.Rows, 10), strconv.FormatInt(g.Inactive, 10)))
		}
	}
	cw.Flush()
	return cw.Error()
}

func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
