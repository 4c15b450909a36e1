"""Tests of the team's run (--run): the recorder, the second witness, calls run alone, compiled memory."""
