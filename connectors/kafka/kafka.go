// Package kafka is the Kafka connector: an unbounded source that reads a topic's
// partitions and a sink that appends to a topic or, for a table with a PRIMARY
// KEY, upserts into it, both with github.com/segmentio/kafka-go (and, for the
// transactions of a job that takes checkpoints, github.com/twmb/franz-go).
//
//	CREATE TABLE clicks (id BIGINT, url TEXT) ENGINE=kafka
//	  CONNECTION='kafka://broker1:9092,broker2:9092/clicks?format=json&group=clicks-job&dead_letter=clicks-bad';
//
// The engine assigns partitions itself rather than through a consumer group's
// rebalancing: subtask i of n reads the partitions p with p % n == i.
//
// A job's progress belongs to that job. Each job starts at the start option's
// offset (earliest or latest) or, restarting, at its own checkpoint's; never
// where another job over the same table got to. With group=G the source also
// commits to G, about once a second and when the source closes (with
// checkpoints, when a checkpoint completes), the offset after the last record
// it has handed downstream, so that G's lag shows how far behind the job is.
// start=group (which needs group=G) opts in to resuming: the job starts where
// G's committed offsets say (at the earliest offset where G has none), so a
// job started again with the same group resumes after the records the last
// one emitted. Records read but not yet emitted when a job stops are read
// again, so delivery is at least once. The source commits without joining G
// as a member, so G never rebalances the partitions.
//
// Each message value is one record: format=text takes the value as the table's
// single TEXT column, format=json as one object (fields by column name, as the
// file connector reads it), format=csv as one RFC 4180 record. A record the
// format cannot parse into the table's columns is counted as a bad record and
// skipped or, with dead_letter=TOPIC, written to that topic: its key, value and
// headers, plus headers saying why (hummer-error) and where it came from
// (hummer-topic, hummer-partition, hummer-offset). A message with a null value
// (a tombstone) is a bad record of a table without a PRIMARY KEY.
//
// A table with a PRIMARY KEY (format=json only) is an upsert topic, as Flink's
// upsert-kafka reads it: each message is the new version of its key's row, and a
// tombstone the delete of the key its message key (a JSON object of the key
// columns) names. The planner reads such a table whole and puts an "upsert"
// operator after the source (exec/operators/upsert.go), which keeps each key's
// current row and emits the changelog: inserts, updates (the old row retracted)
// and deletes, so that a GROUP BY over the topic counts each key's latest row
// once.
//
// The sink writes rows the same way. A table without a PRIMARY KEY is
// append-only, so a retraction is an error. A table with one (format=json only)
// is an upsert topic, as Flink's upsert-kafka writes it: the message key is the
// key columns as a JSON object, an insert or the new version of an update writes
// the whole row, a delete writes a tombstone for its key, and the old version of
// an update is skipped as its new version follows. Keyed messages are spread over
// partitions by the Java client's murmur2 hash of the key, so one key's messages
// stay in one partition, in order, and land where a Java producer would put them.
//
// A job that takes checkpoints (exec/checkpoint.go) gets exactly-once
// delivery instead. The source's state in a checkpoint is, for each of its
// partitions, the offset of the first record it has not handed downstream; a
// job restarting from the checkpoint reads from there, whatever the start
// option says, and the group's offsets are committed only when a
// checkpoint completes (not every second, nor when the source closes). The sink
// writes the rows it takes between two checkpoint barriers in one Kafka
// transaction, with franz-go's kgo, and commits it when that checkpoint
// completes: a reader with isolation.level=read_committed sees each row once,
// and never the rows of a checkpoint that did not complete (txn.go has the
// design and the transactional IDs, hummer-<job>-<vertex>-<topic>-<subtask>-<n>).
// Such a reader waits for the open transaction, so rows become visible a
// checkpoint interval late.
//
// While the brokers cannot be reached, or a partition's leader or the group's
// coordinator is moving, the source and sink retry with backoff (100ms doubling
// to 5s) rather than fail the job, and the task's status says so until a call
// succeeds again. Errors retrying cannot cure fail the job with the broker's
// message: authorization, an invalid topic, a message too large for the
// brokers, a topic still missing after 30 seconds.
package kafka

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
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
	// StartGroup resumes from the group option's committed offsets.
	StartGroup = "group"
)

// Headers a dead letter carries besides the original record's own.
const (
	HeaderError     = "hummer-error"     // why the record could not be read
	HeaderTopic     = "hummer-topic"     // the topic it was read from
	HeaderPartition = "hummer-partition" // its partition, in decimal
	HeaderOffset    = "hummer-offset"    // its offset, in decimal
)

// Spec describes the kafka connector and its options.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "kafka://host:port[,host:port...]/topic[?format=text|json|csv&group=G&start=earliest|latest|group&dead_letter=TOPIC]",
		Description: "Reads a Kafka topic (unbounded source, partitions spread over the subtasks) or writes one (sink: appends, or upserts by the table's PRIMARY KEY).",
		Source:      true,
		Sink:        true,
		Unbounded:   true,
		Upsert:      true,
		Options: []spec.Option{
			{Name: "format", Type: spec.Enum, Default: FormatText, Allowed: []string{FormatText, FormatJSON, FormatCSV},
				Description: "text: each message value is one row of the table's single TEXT column; " +
					"json: one object per message, fields by column name (case-insensitive), a missing field is NULL; " +
					"csv: one RFC 4180 record per message, columns by position, an empty unquoted field is NULL. " +
					"A table with a PRIMARY KEY needs json: its sink upserts, keyed by the key columns as a JSON object."},
			{Name: "group", Type: spec.String,
				Description: "The consumer group the source commits its progress to, for monitoring its lag (about once a second, and when it stops; " +
					"in a job that takes checkpoints, when a checkpoint completes). " +
					"A job resumes from it only with start=group. " +
					"Partitions are still assigned by the engine, not by the group's rebalancing."},
			{Name: "start", Type: spec.Enum, Default: StartEarliest, Allowed: []string{StartEarliest, StartLatest, StartGroup},
				Description: "Where each job starts reading a partition (a job restarting from a checkpoint reads from the checkpoint's offset): " +
					"its earliest or its latest offset, or group: where the group option's group committed " +
					"(the earliest offset where the group has none). A job never starts where another job over the table committed " +
					"unless start=group says so. An offset no longer on the brokers moves to the earliest offset (latest with start=latest)."},
			{Name: "idle_timeout", Type: spec.String, Default: "0s",
				Description: "For a table with a WATERMARK: a partition without records for this long (a Go duration, 30s) no longer holds the watermark back, " +
					"until its next record; 0s: a partition holds it back until its first record and then always. A source subtask without partitions is idle at once."},
			// dead_letter comes last so that the list of valid options in errors
			// keeps the order earlier releases printed.
			{Name: "dead_letter", Type: spec.String,
				Description: "A topic on the same brokers that receives each record the format cannot parse, with its " +
					"key, value and headers and the headers " + HeaderError + ", " + HeaderTopic + ", " +
					HeaderPartition + " and " + HeaderOffset + "; without it such records are counted and skipped."},
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
// URL, its options, that the table's columns suit the format, and that a table
// with a PRIMARY KEY (c.Key) uses format=json. It does not contact the brokers.
// Errors wrap spec.ErrBadOption.
func Validate(c exec.ConnectorSpec) error {
	_, err := parseConfig(c)
	return err
}

// config is a validated kafka table.
type config struct {
	brokers    []string
	topic      string
	format     string
	group      string
	start      string       // earliest, latest or group
	deadLetter string       // the dead_letter topic, "" for none
	schema     types.Schema // the table's columns
	cols       []int        // the positions in schema the source emits, in order
	key        []int        // the positions in schema of the PRIMARY KEY; nil when append-only
	// watermark (exec.ConnectorSpec.Watermark) and idle, its idle_timeout.
	watermark *expr.Expr
	idle      time.Duration
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
	if msg := checkTopic(cfg.topic); msg != "" {
		return config{}, s.Errorf("URL %q: topic %q %s", c.URL, cfg.topic, msg)
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
	if cfg.idle, err = time.ParseDuration(opts.Get("idle_timeout")); err != nil || cfg.idle < 0 {
		return config{}, s.Errorf("option idle_timeout: %q is not a duration, as in 30s", opts.Get("idle_timeout"))
	}
	cfg.watermark = c.Watermark
	if opts.IsSet("group") && cfg.group == "" {
		return config{}, s.Errorf("option group: the consumer group name is empty")
	}
	if cfg.start == StartGroup && cfg.group == "" {
		return config{}, s.Errorf("option start: start=group resumes from the group option's committed offsets and needs group=G")
	}
	if cfg.deadLetter = opts.Get("dead_letter"); opts.IsSet("dead_letter") {
		if msg := checkTopic(cfg.deadLetter); msg != "" {
			return config{}, s.Errorf("option dead_letter: topic %q %s", cfg.deadLetter, msg)
		}
		if cfg.deadLetter == cfg.topic {
			return config{}, s.Errorf("option dead_letter: the dead-letter topic cannot be the topic read (%s): its records would be read again", cfg.topic)
		}
	}
	if err := records.CheckSchema(s, cfg.format, c.Schema); err != nil {
		return config{}, err
	}
	if cfg.cols, err = records.Columns(c); err != nil {
		return config{}, err
	}
	if len(c.Key) > 0 {
		if cfg.format != FormatJSON {
			return config{}, s.Errorf("option format: a table with a PRIMARY KEY is an upsert topic, keyed and valued by JSON objects, and needs format=json, not %s", cfg.format)
		}
		for i, k := range c.Key {
			if k < 0 || k >= len(c.Schema) {
				return config{}, s.Errorf("PRIMARY KEY column %d out of range for %d columns", k, len(c.Schema))
			}
			if slices.Contains(c.Key[:i], k) {
				return config{}, s.Errorf("PRIMARY KEY names column %s twice", c.Schema[k].Name)
			}
		}
		cfg.key = c.Key
	}
	return cfg, nil
}

// reset returns where a partition without an offset to start from starts,
// earliest or latest: with start=group, one the group has no offset for; with
// any start, one whose offset is no longer on the brokers.
func (c config) reset() string {
	if c.start == StartLatest {
		return StartLatest
	}
	return StartEarliest
}

// checkTopic returns why name cannot be a Kafka topic, or "" if it can: the
// brokers take up to 249 ASCII letters, digits, '.', '_' and '-', other than "."
// and "..". Checking here turns a job that would fail at its first request into
// a CREATE TABLE error.
func checkTopic(name string) string {
	switch {
	case name == "":
		return "is empty"
	case name == "." || name == "..":
		return "is not a valid topic name"
	case len(name) > 249:
		return "is longer than 249 characters"
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "may hold only ASCII letters, digits, '.', '_' and '-'"
		}
	}
	return ""
}
