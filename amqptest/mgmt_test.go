package amqptest_test

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"testing"
	"testing/synctest"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// TestManagementInBubble: the management handler, called in process,
// works inside a synctest bubble: a connection is listed by its client's
// connection_name and closed by name, and the client sees 320 with the
// X-Reason text.
func TestManagementInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		props := amqp.NewConnectionProperties()
		props.SetClientConnectionName("orders-worker")
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn(t, conn)
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))

		req := httptest.NewRequest("GET", "/api/connections", nil)
		req.SetBasicAuth("guest", "guest")
		rec := httptest.NewRecorder()
		srv.Management().ServeHTTP(rec, req)
		var list []struct {
			Name             string         `json:"name"`
			ClientProperties map[string]any `json:"client_properties"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list) != 1 {
			t.Fatalf("GET /api/connections: %d %s (%v)", rec.Code, rec.Body, err)
		}
		if got := list[0].ClientProperties["connection_name"]; got != "orders-worker" {
			t.Errorf("connection_name %v", got)
		}

		req = httptest.NewRequest("DELETE", "/api/connections/"+url.PathEscape(list[0].Name), nil)
		req.SetBasicAuth("guest", "guest")
		req.Header.Set("X-Reason", "drill")
		rec = httptest.NewRecorder()
		srv.Management().ServeHTTP(rec, req)
		if rec.Code != 204 {
			t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
		}
		synctest.Wait()
		select {
		case e := <-closed:
			if e == nil || e.Code != 320 || e.Reason != "CONNECTION_FORCED - drill" {
				t.Errorf("closed with %v", e)
			}
		default:
			t.Fatal("the client was not told")
		}
	})
}
