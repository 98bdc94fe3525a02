#!/usr/bin/env escript
%% Writes Erlang re's answers for the patterns and subjects amqpsim's
%% sim/pattern_test.go checks its translation with: one line per
%% pattern, the subjects it matches (as indexes into the subject list).
main(_) ->
    Subjects = [<<>>, <<"\n">>, <<"a">>, <<"abc">>, <<"abc\n">>, <<"abc\n\n">>, <<"ABC">>,
                <<"é"/utf8>>, <<"ééé"/utf8>>, <<"xéy"/utf8>>, <<"qé"/utf8>>, <<"q", 233>>, <<233>>, <<201>>,
                <<"a b">>, <<"a\tb">>, <<"a", 11, "b">>, <<"a", 160, "b">>, <<"a_1">>, <<"amq.gen-X">>,
                <<"orders.eu">>, <<"Ünïcödé"/utf8>>, <<"x\ny">>, <<"\r\n">>, <<"日本"/utf8>>],
    Patterns = [<<"^$">>, <<".*">>, <<"^.{1,3}$">>, <<"^abc$">>, <<"^abc">>, <<"abc$">>, <<"^x[é]y$"/utf8>>,
                <<"^xéy$"/utf8>>, <<"^q\\xe9$">>, <<"^q\\x{e9}$">>, <<"é"/utf8>>, <<"^\\w+$">>, <<"^\\W+$">>,
                <<"^\\s">>, <<"\\s">>, <<"\\S">>, <<"^[\\s]+$">>, <<"[\\S]">>, <<"\\h">>, <<"\\v">>, <<"\\H\\V">>,
                <<"^[[:alpha:]]+$">>, <<"^[[:^alpha:]]+$">>, <<"^[[:alnum:]_.-]+$">>, <<"[[:upper:]]">>,
                <<"[[:lower:]]">>, <<"[[:punct:]]">>, <<"[[:space:]]">>, <<"[[:print:]]+">>, <<"[[:cntrl:]]">>,
                <<"(?i)^abc$">>, <<"(?i)\\xc9">>, <<"(?i)^é$"/utf8>>, <<"(?i)[é]"/utf8>>, <<"^[^a]*$">>,
                <<"^(abc|x.y)$">>, <<"^(abc$|q)">>, <<"(?m)^y$">>, <<"(?s)x.y">>, <<"x.y">>, <<"^a.b$">>,
                <<"^amq\\.gen">>, <<"^(orders|billing)\\.">>, <<"\\Qa.b\\E">>, <<"\\d">>, <<"\\D">>,
                <<"^[]a]$">>, <<"^[^]a]+$">>, <<"abc$|^a$">>, <<"(abc$)?">>, <<"^.$">>, <<"^..$">>, <<"\\x{e9}">>,
                <<"[\\x{c0}-\\x{ff}]">>, <<"^[a-z]+$">>, <<"\\p{L}">>, <<"^\\pL+$">>],
    lists:foreach(fun(P) ->
        Idx = [I - 1 || {I, S} <- lists:zip(lists:seq(1, length(Subjects)), Subjects),
                        re:run(S, P, [{capture, none}]) =:= match],
        io:format("~s\t~w~n", [base64:encode(P), Idx])
    end, Patterns),
    io:format("subjects\t~s~n", [lists:join(",", [base64:encode(S) || S <- Subjects])]),
    io:format("otp\t~s~n", [erlang:system_info(otp_release)]).
