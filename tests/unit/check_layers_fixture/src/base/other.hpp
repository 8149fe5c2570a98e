// A base header that includes nothing of ours.
#pragma once

#include <string>
