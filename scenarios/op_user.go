package scenarios

import (
	"regexp"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// The user steps: users and their permissions in the vhost "/", which
// AMQP 0-9-1 cannot manage: on a broker the recorder runs rabbitmqctl,
// with the run's prefix on user names (guest excepted).

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
// expands to the prefixed name there; use it only for guest). Guest's
// topic permissions are cleared at the end of a run (a created user's go
// with it).
type SetTopicPermissions struct{ User, Exchange, Write, Read string }

func init() {
	register(
		&verb{name: "user", usage: "user NAME PASSWORD [tags=T,T]", minPos: 2, maxPos: 2, options: []string{"tags"},
			build: func(a *argSet) (Op, error) {
				u := AddUser{Name: a.str(0), Password: a.str(1)}
				if t, ok := a.opt("tags"); ok && t.val != "" {
					u.Tags = strings.Split(t.val, ",")
				}
				return u, nil
			}},
		&verb{name: "delete-user", usage: "delete-user NAME", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			return DeleteUser{Name: a.str(0)}, nil
		}},
		&verb{name: "permissions", usage: "permissions USER CONFIGURE WRITE READ", minPos: 4, maxPos: 4,
			build: func(a *argSet) (Op, error) {
				p := SetPermissions{User: a.str(0), Configure: a.str(1), Write: a.str(2), Read: a.str(3)}
				for i, re := range []string{p.Configure, p.Write, p.Read} {
					if _, err := regexp.Compile(re); err != nil {
						return nil, a.errAt(a.pos[i+1], "invalid regular expression: %v", err)
					}
				}
				return p, nil
			}},
		&verb{name: "clear-permissions", usage: "clear-permissions USER", minPos: 1, maxPos: 1, build: func(a *argSet) (Op, error) {
			return ClearPermissions{User: a.str(0)}, nil
		}},
		&verb{name: "user-tags", usage: "user-tags USER [TAG...]", minPos: 1, maxPos: -1, build: func(a *argSet) (Op, error) {
			o := SetUserTags{Name: a.str(0)}
			for i := 1; i < len(a.pos); i++ {
				o.Tags = append(o.Tags, a.str(i))
			}
			return o, nil
		}},
		&verb{name: "topic-permissions", usage: "topic-permissions USER EXCHANGE WRITE READ", minPos: 4, maxPos: 4,
			build: func(a *argSet) (Op, error) {
				o := SetTopicPermissions{User: a.str(0), Exchange: a.str(1), Write: a.str(2), Read: a.str(3)}
				for i, re := range []string{o.Write, o.Read} {
					if _, err := regexp.Compile(re); err != nil {
						return nil, a.errAt(a.pos[i+2], "invalid regular expression: %v", err)
					}
				}
				return o, nil
			}},
	)
}

func (AddUser) isOp()             {}
func (DeleteUser) isOp()          {}
func (SetPermissions) isOp()      {}
func (ClearPermissions) isOp()    {}
func (SetUserTags) isOp()         {}
func (SetTopicPermissions) isOp() {}

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

func (o AddUser) runSim(b *sim.Broker) error {
	return b.AddUser(sim.User{Name: o.Name, Password: o.Password, Tags: o.Tags})
}

func (o DeleteUser) runSim(b *sim.Broker) error { return b.DeleteUser(o.Name) }

func (o SetPermissions) runSim(b *sim.Broker) error {
	return b.SetPermissions("/", o.User, sim.Permissions{Configure: o.Configure, Write: o.Write, Read: o.Read})
}

func (o ClearPermissions) runSim(b *sim.Broker) error { return b.ClearPermissions("/", o.User) }

func (o SetUserTags) runSim(b *sim.Broker) error { return b.SetUserTags(o.Name, o.Tags...) }

func (o SetTopicPermissions) runSim(b *sim.Broker) error {
	return b.SetTopicPermissions(sim.TopicPermissions{User: o.User, Vhost: "/", Exchange: o.Exchange, Write: o.Write, Read: o.Read})
}

func (o AddUser) runCtl(d *amqpDriver) error {
	if err := d.rabbitmqctl("add_user", d.user(o.Name), o.Password); err != nil {
		return err
	}
	d.users = append(d.users, d.user(o.Name))
	return d.rabbitmqctl(append([]string{"set_user_tags", d.user(o.Name)}, o.Tags...)...)
}

func (o DeleteUser) runCtl(d *amqpDriver) error {
	return d.rabbitmqctl("delete_user", d.user(o.Name))
}

func (o SetPermissions) runCtl(d *amqpDriver) error {
	return d.rabbitmqctl("set_permissions", "-p", "/", d.user(o.User), d.pattern(o.Configure), d.pattern(o.Write), d.pattern(o.Read))
}

func (o ClearPermissions) runCtl(d *amqpDriver) error {
	return d.rabbitmqctl("clear_permissions", "-p", "/", d.user(o.User))
}

func (o SetUserTags) runCtl(d *amqpDriver) error {
	return d.rabbitmqctl(append([]string{"set_user_tags", d.user(o.Name)}, o.Tags...)...)
}

func (o SetTopicPermissions) runCtl(d *amqpDriver) error {
	if d.user(o.User) == o.User {
		// guest's: cleared at the end (a created user's go with it).
		d.topicPerms = append(d.topicPerms, [2]string{o.User, d.p(o.Exchange)})
	}
	return d.rabbitmqctl("set_topic_permissions", "-p", "/", d.user(o.User), d.p(o.Exchange), o.Write, o.Read)
}
