package scenarios

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// AddUser creates a user: "user app s3cret tags=monitoring,management"
// (rabbitmqctl add_user and set_user_tags on a broker). It has no
// permissions until a permissions step grants them.
type AddUser struct {
	Name, Password string
	Tags           []string
}

// DeleteUser deletes a user: "delete-user app". RabbitMQ closes the user's
// connections.
type DeleteUser struct{ Name string }

// SetPermissions sets a user's permissions in the vhost "/": "permissions
// app ^app ^app .*" (configure, write, read; "" matches nothing). On a
// broker, an expression that starts with ^ gets the run's name prefix
// after it, unless it continues with amq\. (names the recorder does not
// prefix).
type SetPermissions struct{ User, Configure, Write, Read string }

// ClearPermissions clears a user's permissions in "/":
// "clear-permissions app".
type ClearPermissions struct{ User string }

// SetUserTags replaces a user's tags: "user-tags app impersonator", or
// "user-tags app" to clear them (rabbitmqctl set_user_tags on a broker).
// A connection keeps the tags its user had when it logged in.
type SetUserTags struct {
	Name string
	Tags []string
}

// SetTopicPermissions sets a user's topic permissions on an exchange of
// "/": "topic-permissions app tx ^a ^b" (write, then read: expressions
// over routing keys, "" matching the empty key only, {username} and
// {vhost} expanded; rabbitmqctl set_topic_permissions on a broker). On a
// broker the exchange and the user get the run's prefix, the expressions
// do not: they match routing keys, which are not prefixed (so {username}
// expands to the prefixed name there; use it only for guest).
type SetTopicPermissions struct{ User, Exchange, Write, Read string }

// SetOperatorPolicy sets an operator policy of "/", in the policy step's
// words: "operator-policy cap ^ arg.max-length=2 apply-to=queues".
type SetOperatorPolicy struct {
	Name, Pattern, ApplyTo string
	Priority               int
	Definition             protocol.Table
}

// ClearOperatorPolicy clears an operator policy:
// "clear-operator-policy cap".
type ClearOperatorPolicy struct{ Name string }

func (AddUser) isOp()             {}
func (DeleteUser) isOp()          {}
func (SetPermissions) isOp()      {}
func (ClearPermissions) isOp()    {}
func (SetUserTags) isOp()         {}
func (SetTopicPermissions) isOp() {}
func (SetOperatorPolicy) isOp()   {}
func (ClearOperatorPolicy) isOp() {}

// String returns the AddUser step line.
func (o AddUser) String() string {
	w := []string{"user", word(o.Name), word(o.Password)}
	if len(o.Tags) > 0 {
		w = append(w, "tags="+optWord(strings.Join(o.Tags, ",")))
	}
	return line(w...)
}

// String returns the DeleteUser step line.
func (o DeleteUser) String() string { return line("delete-user", word(o.Name)) }

// String returns the SetPermissions step line.
func (o SetPermissions) String() string {
	return strings.Join([]string{"permissions", word(o.User), word(o.Configure), word(o.Write), word(o.Read)}, " ")
}

// String returns the ClearPermissions step line.
func (o ClearPermissions) String() string { return line("clear-permissions", word(o.User)) }

// String returns the SetUserTags step line.
func (o SetUserTags) String() string {
	w := []string{"user-tags", word(o.Name)}
	for _, t := range o.Tags {
		w = append(w, word(t))
	}
	return strings.Join(w, " ")
}

// String returns the SetTopicPermissions step line.
func (o SetTopicPermissions) String() string {
	return strings.Join([]string{"topic-permissions", word(o.User), word(o.Exchange), word(o.Write), word(o.Read)}, " ")
}

// String returns the SetOperatorPolicy step line.
func (o SetOperatorPolicy) String() string {
	s := SetPolicy(o).String()
	return "operator-" + s
}

// String returns the ClearOperatorPolicy step line.
func (o ClearOperatorPolicy) String() string { return line("clear-operator-policy", word(o.Name)) }

// addUserVerbs registers the steps above.
func addUserVerbs(verbs map[string]*verb) {
	verbs["user"] = &verb{usage: "user NAME PASSWORD [tags=T,T]", minPos: 2, maxPos: 2, options: []string{"tags"},
		build: func(a *argSet) (Op, error) {
			u := AddUser{Name: a.str(0), Password: a.str(1)}
			if t, ok := a.opt("tags"); ok && t.val != "" {
				u.Tags = strings.Split(t.val, ",")
			}
			return u, nil
		}}
	verbs["delete-user"] = &verb{usage: "delete-user NAME", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
		return DeleteUser{Name: a.str(0)}, nil
	}}
	verbs["permissions"] = &verb{usage: "permissions USER CONFIGURE WRITE READ", minPos: 4, maxPos: 4,
		build: func(a *argSet) (Op, error) {
			p := SetPermissions{User: a.str(0), Configure: a.str(1), Write: a.str(2), Read: a.str(3)}
			for i, re := range []string{p.Configure, p.Write, p.Read} {
				if _, err := regexp.Compile(re); err != nil {
					return nil, a.errAt(a.pos[i+1], "invalid regular expression: %v", err)
				}
			}
			return p, nil
		}}
	verbs["clear-permissions"] = &verb{usage: "clear-permissions USER", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
		return ClearPermissions{User: a.str(0)}, nil
	}}
	verbs["user-tags"] = &verb{usage: "user-tags USER [TAG...]", minPos: 1, maxPos: -1, build: func(a *argSet) (Op, error) {
		o := SetUserTags{Name: a.str(0)}
		for i := 1; i < len(a.pos); i++ {
			o.Tags = append(o.Tags, a.str(i))
		}
		return o, nil
	}}
	verbs["topic-permissions"] = &verb{usage: "topic-permissions USER EXCHANGE WRITE READ", minPos: 4, maxPos: 4,
		build: func(a *argSet) (Op, error) {
			o := SetTopicPermissions{User: a.str(0), Exchange: a.str(1), Write: a.str(2), Read: a.str(3)}
			for i, re := range []string{o.Write, o.Read} {
				if _, err := regexp.Compile(re); err != nil {
					return nil, a.errAt(a.pos[i+2], "invalid regular expression: %v", err)
				}
			}
			return o, nil
		}}
	policy := verbs["policy"]
	verbs["operator-policy"] = &verb{usage: "operator-policy NAME ^PATTERN [apply-to=queues|exchanges|all] [priority=N] arg.KEY=V...",
		minPos: policy.minPos, maxPos: policy.maxPos, options: policy.options, args: true,
		build: func(a *argSet) (Op, error) {
			op, err := policy.build(a)
			if err != nil {
				return nil, err
			}
			return SetOperatorPolicy(op.(SetPolicy)), nil
		}}
	verbs["clear-operator-policy"] = &verb{usage: "clear-operator-policy NAME", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
		return ClearOperatorPolicy{Name: a.str(0)}, nil
	}}
}

// simAdmin runs an operator step on a simulator, on the vhost "/".
func simAdmin(b *sim.Broker, op Op) error {
	switch o := op.(type) {
	case SetPolicy:
		return b.SetPolicy("/", sim.Policy{Name: o.Name, Pattern: o.Pattern, ApplyTo: o.ApplyTo, Priority: o.Priority, Definition: o.Definition})
	case ClearPolicy:
		return b.ClearPolicy("/", o.Name)
	case AddUser:
		return b.AddUser(sim.User{Name: o.Name, Password: o.Password, Tags: o.Tags})
	case DeleteUser:
		return b.DeleteUser(o.Name)
	case SetPermissions:
		return b.SetPermissions("/", o.User, sim.Permissions{Configure: o.Configure, Write: o.Write, Read: o.Read})
	case ClearPermissions:
		return b.ClearPermissions("/", o.User)
	case SetUserTags:
		return b.SetUserTags(o.Name, o.Tags...)
	case SetTopicPermissions:
		return b.SetTopicPermissions(sim.TopicPermissions{User: o.User, Vhost: "/", Exchange: o.Exchange, Write: o.Write, Read: o.Read})
	case SetOperatorPolicy:
		return b.SetOperatorPolicy("/", sim.Policy{Name: o.Name, Pattern: o.Pattern, ApplyTo: o.ApplyTo, Priority: o.Priority, Definition: o.Definition})
	case ClearOperatorPolicy:
		return b.ClearOperatorPolicy("/", o.Name)
	}
	return fmt.Errorf("not an operator step: %v", op)
}

// admin runs an operator step: on the simulator behind the wire directly,
// on a broker through rabbitmqctl (see policy). User names get the run's
// prefix, except guest's.
func (d *amqpDriver) admin(op Op) error {
	if d.sim != nil {
		return simAdmin(d.sim.b, op)
	}
	switch o := op.(type) {
	case SetPolicy, ClearPolicy:
		return d.policy(op)
	case AddUser:
		if err := rabbitmqctl("add_user", d.user(o.Name), o.Password); err != nil {
			return err
		}
		d.users = append(d.users, d.user(o.Name))
		return rabbitmqctl(append([]string{"set_user_tags", d.user(o.Name)}, o.Tags...)...)
	case DeleteUser:
		return rabbitmqctl("delete_user", d.user(o.Name))
	case SetPermissions:
		return rabbitmqctl("set_permissions", "-p", "/", d.user(o.User), d.pattern(o.Configure), d.pattern(o.Write), d.pattern(o.Read))
	case ClearPermissions:
		return rabbitmqctl("clear_permissions", "-p", "/", d.user(o.User))
	case SetUserTags:
		return rabbitmqctl(append([]string{"set_user_tags", d.user(o.Name)}, o.Tags...)...)
	case SetTopicPermissions:
		if d.user(o.User) == o.User {
			// guest's: cleared at the end (a created user's go with it).
			d.topicPerms = append(d.topicPerms, [2]string{o.User, d.p(o.Exchange)})
		}
		return rabbitmqctl("set_topic_permissions", "-p", "/", d.user(o.User), d.p(o.Exchange), o.Write, o.Read)
	case SetOperatorPolicy:
		d.opPolicies = append(d.opPolicies, d.p(o.Name))
		return d.setPolicy("set_operator_policy", SetPolicy(o), d.pattern(o.Pattern))
	case ClearOperatorPolicy:
		return rabbitmqctl("clear_operator_policy", "-p", "/", d.p(o.Name))
	}
	return fmt.Errorf("not an operator step: %v", op)
}

// user prefixes a user name; guest is the broker's own.
func (d *amqpDriver) user(name string) string {
	if name == "guest" || name == "" {
		return name
	}
	return d.prefix + name
}

// pattern puts the run's prefix after a leading ^ of an expression,
// leaving "", unanchored ones and ^amq\. alone.
func (d *amqpDriver) pattern(re string) string {
	if d.prefix == "" || !strings.HasPrefix(re, "^") || strings.HasPrefix(re, `^amq\.`) {
		return re
	}
	return "^" + regexp.QuoteMeta(d.prefix) + re[1:]
}

// userURL is the driver's URL with another user's credentials.
func (d *amqpDriver) userURL(o Conn) (string, error) {
	if o.User == "" {
		return d.url, nil
	}
	u, err := url.Parse(d.url)
	if err != nil {
		return "", err
	}
	u.User = url.UserPassword(d.user(o.User), o.Password)
	return u.String(), nil
}

// connRefused is a connection the broker refused in the handshake; line
// is the step's result line, "" when the connection's events carry it. Both drivers see the same: a login refusal
// reaches amqp091-go without its text (the client reports
// ErrCredentials), a refused connection.open with RabbitMQ's.
type connRefused struct{ line string }

func (e *connRefused) Error() string { return e.line }

// amqpRefusal makes a connRefused of amqp091-go's handshake error, or
// returns nil.
func (d *amqpDriver) amqpRefusal(conn string, err error) error {
	if errors.Is(err, amqp.ErrCredentials) {
		return &connRefused{conn + " <- login refused"}
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		// The tap saw the connection.close and reports it.
		return &connRefused{}
	}
	return nil
}

// simRefusal makes a connRefused of sim.Broker.Dial's error, or returns
// nil.
func simRefusal(conn string, err error) error {
	var le *sim.LoginError
	if errors.As(err, &le) {
		return &connRefused{conn + " <- login refused"}
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return &connRefused{fmt.Sprintf("%s <- connection.close %d (connection.open): %s", conn, pe.Code, normalizeNames(pe.Text))}
	}
	return nil
}
