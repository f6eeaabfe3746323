// Package kafka is the Kafka connector: an unbounded source that reads a topic's
// partitions and an append-only sink that writes a topic, both with
// github.com/segmentio/kafka-go.
//
//	CREATE TABLE clicks (id BIGINT, url TEXT) ENGINE=kafka
//	  CONNECTION='kafka://broker1:9092,broker2:9092/clicks?format=json&start=earliest';
//
// The engine assigns partitions itself rather than through a consumer group's
// rebalancing: subtask i of n reads the partitions p with p % n == i, from the
// earliest or the latest offset. The group option names the consumer group the
// source will commit its offsets to once checkpoints exist; until then nothing is
// committed and a restarted job starts again at the start option's offset.
//
// Each message value is one record: format=text takes the value as the table's
// single TEXT column, format=json as one object (fields by column name, as the
// file connector reads it), format=csv as one RFC 4180 record. The sink writes
// rows the same way; it is append-only, so a retraction is an error (upsert sinks
// keyed by a PRIMARY KEY come later).
package kafka

import (
	"net/url"
	"strings"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// Name is the connector's ENGINE name.
const Name = "kafka"

// Formats of the format option.
const (
	FormatText = records.FormatText
	FormatCSV  = records.FormatCSV
	FormatJSON = records.FormatJSON
)

// Start positions of the start option.
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"
)

// Spec describes the kafka connector and its options.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "kafka://host:port[,host:port...]/topic[?format=text|json|csv&group=G&start=earliest|latest]",
		Description: "Reads a Kafka topic (unbounded source, partitions spread over the subtasks) or appends to one (sink).",
		Source:      true,
		Sink:        true,
		Unbounded:   true,
		Options: []spec.Option{
			{Name: "format", Type: spec.Enum, Default: FormatText, Allowed: []string{FormatText, FormatJSON, FormatCSV},
				Description: "text: each message value is one row of the table's single TEXT column; " +
					"json: one object per message, fields by column name (case-insensitive), a missing field is NULL; " +
					"csv: one RFC 4180 record per message, columns by position, an empty unquoted field is NULL."},
			{Name: "group", Type: spec.String,
				Description: "The consumer group offsets will be committed to with checkpoints (not yet: nothing is committed)."},
			{Name: "start", Type: spec.Enum, Default: StartEarliest, Allowed: []string{StartEarliest, StartLatest},
				Description: "Where the source starts reading each partition: its earliest or its latest offset."},
		},
	}
}

// Register adds the kafka source and sink to r.
func Register(r *exec.Registry) {
	r.RegisterSource(Name, func(c exec.ConnectorSpec) (exec.Source, error) {
		cfg, err := parseConfig(c)
		if err != nil {
			return nil, err
		}
		return newSource(cfg), nil
	})
	r.RegisterSink(Name, func(c exec.ConnectorSpec) (exec.Operator, error) {
		cfg, err := parseConfig(c)
		if err != nil {
			return nil, err
		}
		return newSink(cfg), nil
	})
}

// Validate checks a kafka table at CREATE TABLE time: brokers and a topic in the
// URL, its options, and that the table's columns suit the format. It does not
// contact the brokers. Errors wrap spec.ErrBadOption.
func Validate(c exec.ConnectorSpec) error {
	_, err := parseConfig(c)
	return err
}

// config is a validated kafka table.
type config struct {
	brokers []string
	topic   string
	format  string
	group   string
	start   string
	schema  types.Schema // the table's columns
	cols    []int        // the positions in schema the source emits, in order
}

func parseConfig(c exec.ConnectorSpec) (config, error) {
	s := Spec()
	u, err := url.Parse(c.URL)
	if err != nil {
		return config{}, s.Errorf("bad URL %q: %v (want %s)", c.URL, err, s.URL)
	}
	switch {
	case u.Scheme != "kafka":
		return config{}, s.Errorf("URL %q: scheme must be kafka (want %s)", c.URL, s.URL)
	case u.User != nil:
		return config{}, s.Errorf("URL %q: user information is not allowed", c.URL)
	case u.Fragment != "":
		return config{}, s.Errorf("URL %q: a fragment is not allowed", c.URL)
	}
	cfg := config{schema: c.Schema}
	for b := range strings.SplitSeq(u.Host, ",") {
		if b == "" {
			continue
		}
		if !strings.Contains(b, ":") {
			return config{}, s.Errorf("URL %q: broker %q needs a port, as in host:9092", c.URL, b)
		}
		cfg.brokers = append(cfg.brokers, b)
	}
	if len(cfg.brokers) == 0 {
		return config{}, s.Errorf("URL %q: no brokers (want %s)", c.URL, s.URL)
	}
	cfg.topic = strings.TrimPrefix(u.Path, "/")
	if cfg.topic == "" || strings.Contains(cfg.topic, "/") {
		return config{}, s.Errorf("URL %q: the path must be one topic name (want %s)", c.URL, s.URL)
	}
	q, err := spec.ParseQuery(u.RawQuery)
	if err != nil {
		return config{}, err
	}
	opts, err := s.Parse(q)
	if err != nil {
		return config{}, err
	}
	cfg.format, cfg.group, cfg.start = opts.Get("format"), opts.Get("group"), opts.Get("start")
	if err := records.CheckSchema(s, cfg.format, c.Schema); err != nil {
		return config{}, err
	}
	if cfg.cols, err = records.Columns(c); err != nil {
		return config{}, err
	}
	return cfg, nil
}
