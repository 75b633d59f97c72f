package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/signoff/signoff/bot"
)

// Verdict is one classified command as `signoff classify --json` and the
// MCP classify tool write it.
type Verdict struct {
	Command string    `json:"command"`
	Level   bot.Level `json:"level"`
	Reasons []string  `json:"reasons"`
}

// Classify classifies one shell command line.
func Classify(c Classifier, cmd string) Verdict {
	a := c.Command(cmd)
	return verdict(cmd, a)
}

func verdict(cmd string, a bot.Assessment) Verdict {
	v := Verdict{Command: cmd, Level: a.Level, Reasons: a.Reasons}
	if v.Level == "" {
		v.Level = bot.Dangerous
		v.Reasons = []string{"the classifier gave no level"}
	}
	if v.Reasons == nil {
		v.Reasons = []string{}
	}
	return v
}

// String is the human form: "dangerous: reason; reason", or the level
// alone when there are no reasons.
func (v Verdict) String() string {
	if len(v.Reasons) == 0 {
		return string(v.Level)
	}
	return string(v.Level) + ": " + strings.Join(v.Reasons, "; ")
}

// MaxLine is the longest command line ClassifyLines reads; a longer line
// is reported dangerous, unread.
const MaxLine = 1 << 20

// ClassifyLines reads one command per line from r and writes one Verdict
// per line to w as JSON, in order: every input line, blank ones too, has
// its output line, so the two streams can be pasted side by side. A
// trailing CR is dropped. A line longer than MaxLine is not classified:
// its verdict is dangerous, with the first bytes as the command. Only
// reading or writing failures are errors.
func ClassifyLines(c Classifier, r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for {
		line, long, err := readLine(br, MaxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read commands: %w", err)
		}
		if errors.Is(err, io.EOF) && line == "" && !long {
			break
		}
		v := Verdict{}
		if long {
			v = Verdict{Command: clip(line, 200), Level: bot.Dangerous,
				Reasons: []string{fmt.Sprintf("line longer than %d bytes; not classified", MaxLine)}}
		} else {
			v = Classify(c, line)
		}
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write verdict: %w", err)
		}
		// Flush per line: a caller may be waiting for each answer.
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("write verdict: %w", err)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write verdict: %w", err)
	}
	return nil
}

// readLine returns the next line without its end. When the line is longer
// than max, it returns its first max bytes and long, having consumed the
// rest. At the end of input, err is io.EOF (with the last line, if it
// had no newline).
func readLine(br *bufio.Reader, max int) (line string, long bool, err error) {
	var b []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(b) <= max {
			b = append(b, chunk[:min(len(chunk), max+1-len(b))]...)
		}
		if err != nil {
			if len(b) > max {
				return string(b[:max]), true, err
			}
			return string(b), false, err
		}
		if !isPrefix {
			break
		}
	}
	if len(b) > max {
		return string(b[:max]), true, nil
	}
	return strings.TrimSuffix(string(b), "\r"), false, nil
}
