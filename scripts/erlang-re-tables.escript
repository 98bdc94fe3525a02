#!/usr/bin/env escript
main(_) ->
    Classes = ["\\w","\\d","\\s","[[:alpha:]]","[[:digit:]]","[[:alnum:]]","[[:upper:]]","[[:lower:]]","[[:space:]]","[[:punct:]]","[[:print:]]","[[:graph:]]","[[:cntrl:]]","[[:xdigit:]]","[[:blank:]]","[[:word:]]","\\h","\\v"],
    lists:foreach(fun(C) ->
        Bytes = [B || B <- lists:seq(0,255), re:run(<<B>>, list_to_binary(C), [{capture,none}]) =:= match],
        io:format("~s ~w~n", [C, Bytes])
    end, Classes),
    Folds = [{B, [C || C <- lists:seq(0,255), C =/= B, re:run(<<C>>, list_to_binary(io_lib:format("(?i)\\x{~.16b}", [B])), [{capture,none}]) =:= match]} || B <- lists:seq(0,255)],
    io:format("fold ~w~n", [[{B,L} || {B,L} <- Folds, L =/= []]]),
    Dot = [B || B <- lists:seq(0,255), re:run(<<B>>, <<"^.$">>, [{capture,none}]) =:= match],
    io:format("dot-not ~w~n", [lists:seq(0,255) -- Dot]).
