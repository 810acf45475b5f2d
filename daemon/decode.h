// `petrel decode`: BGP messages as hex to JSON.
#pragma once

int decode_main(int argc, char** argv);
