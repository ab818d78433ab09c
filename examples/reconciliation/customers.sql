-- Two copies of the customer list that have drifted apart: the CRM export (customers_a, the
-- source of truth) and the billing system's copy (customers_b).
CREATE TABLE customers_a (
    id    integer PRIMARY KEY,
    name  text    NOT NULL,
    email text    NOT NULL
);

CREATE TABLE customers_b (
    id    integer PRIMARY KEY,
    name  text    NOT NULL,
    email text    NOT NULL
);

INSERT INTO customers_a (id, name, email) VALUES
    (1, 'Ada Lovelace',     'ada@example.com'),
    (2, 'Grace Hopper',     'grace@example.com'),
    (3, 'Alan Turing',      'alan.turing@example.com'),
    (4, 'Edsger Dijkstra',  'edsger@example.com'),
    (5, 'Barbara Liskov',   'barbara.liskov@example.com'),
    (6, 'Donald Knuth',     'knuth@example.com');

INSERT INTO customers_b (id, name, email) VALUES
    (1, 'Ada Lovelace',     'ada@example.com'),
    (2, 'Grace Hopper',     'grace.hopper@old-domain.example'),
    (3, 'Alan Turing',      'alan.turing@example.com'),
    (4, 'Edsger Dijkstra',  'edsger@example.com'),
    (5, 'Barbara Liskov',   'b.liskov@old-domain.example');
