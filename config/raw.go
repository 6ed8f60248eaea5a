package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// stageDocs are the pipelines of the config document as written, before
// viper folds their keys: a stage's config: block is taken from here.
type stageDocs map[string]any

// rawStageConfigs decodes src (a document viper has already accepted) in
// its own format, keeping the keys' case.
func rawStageConfigs(ext string, src []byte) (stageDocs, error) {
	var doc map[string]any
	var err error
	switch ext {
	case "json":
		d := json.NewDecoder(bytes.NewReader(src))
		d.UseNumber() // integers beyond 2^53 stay exact
		err = d.Decode(&doc)
	case "toml":
		err = toml.Unmarshal(src, &doc)
	default:
		err = yaml.Unmarshal(src, &doc)
	}
	if err != nil {
		return nil, err
	}
	pipes, _ := doc["pipelines"].(map[string]any)
	out := stageDocs{}
	for name, p := range pipes {
		key := strings.ToLower(name)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("pipelines: two pipelines are named %q when case is ignored", key)
		}
		out[key] = p
	}
	return out, nil
}

// config returns stage i of pipeline's config: block as JSON, or nil when
// the stage has none.
func (d stageDocs) config(pipeline string, i int) (json.RawMessage, error) {
	p, _ := d[pipeline].(map[string]any)
	var stage any
	switch stages := p["stages"].(type) {
	case []any:
		if i < len(stages) {
			stage = stages[i]
		}
	case []map[string]any: // TOML's array of tables
		if i < len(stages) {
			stage = stages[i]
		}
	}
	m, _ := stage.(map[string]any)
	c, ok := m["config"]
	if !ok || c == nil {
		return nil, nil
	}
	c, err := jsonable(c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// jsonable turns YAML's non-string map keys (1: x, true: y) into strings,
// as the JSON a gate reads has only string keys; two keys that print the
// same are an error.
func jsonable(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			e, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			ks := fmt.Sprint(k)
			if _, dup := out[ks]; dup {
				return nil, fmt.Errorf("key %q appears twice", ks)
			}
			e, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[ks] = e
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			e, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case []map[string]any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = e
		}
		return jsonable(out)
	}
	return v, nil
}
