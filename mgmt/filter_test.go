package mgmt_test

import (
	"strings"
)

// ours keeps, of a list answer (or a definitions document's lists), the
// elements this test made or that every broker has, so that what other
// clients of a shared RabbitMQ did meanwhile stays out of the recording
// and the comparison.
func ours(body any, ports []string) any {
	switch v := body.(type) {
	case []any:
		out := []any{}
		for _, e := range v {
			if m, ok := e.(map[string]any); !ok || keep(m, ports) {
				out = append(out, e)
			}
		}
		return out
	case map[string]any:
		if _, defs := v["rabbit_version"]; defs {
			for k, list := range v {
				if l, ok := list.([]any); ok {
					v[k] = ours(l, ports)
				}
			}
		}
	}
	return body
}

func keep(m map[string]any, ports []string) bool {
	str := func(m map[string]any, k string) (string, bool) { s, ok := m[k].(string); return s, ok }
	sub := func(k string) map[string]any { s, _ := m[k].(map[string]any); return s }
	mine := func(s string) bool {
		if strings.HasPrefix(s, "mgmt-") {
			return true
		}
		for _, p := range ports {
			if strings.HasPrefix(s, p+" ->") {
				return true
			}
		}
		return false
	}
	if _, ok := m["consumer_tag"]; ok {
		n, _ := str(sub("queue"), "name")
		return mine(n)
	}
	if n, ok := str(sub("client_properties"), "connection_name"); ok {
		return mine(n)
	}
	if n, ok := str(sub("connection_details"), "name"); ok {
		return mine(n)
	}
	if n, ok := str(sub("channel_details"), "connection_name"); ok {
		return mine(n)
	}
	if s, ok := str(m, "source"); ok {
		d, _ := str(m, "destination")
		return mine(s) || mine(d)
	}
	if n, ok := str(m, "name"); ok {
		return mine(n) || n == "guest" || n == "/" || n == "" || strings.HasPrefix(n, "amq.") && !strings.HasPrefix(n, "amq.gen-")
	}
	if u, ok := str(m, "user"); ok {
		return mine(u) || u == "guest"
	}
	return true
}
