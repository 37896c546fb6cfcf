// cuda_peer_cliques (cuda_device.h): the grouping is the same over the driver's peer-access
// answers and the emulated matrix, so it is written once, over cuda_can_access_peer.
#include <span>
#include <vector>

#include "volley/core/cuda_device.h"

namespace volley {

std::vector<std::vector<int>> cuda_peer_cliques(std::span<const int> devices) {
  std::vector<std::vector<int>> cliques;
  for (const int device : devices) {
    bool placed = false;
    for (std::vector<int>& clique : cliques) {
      bool mutual = true;
      for (const int member : clique) {
        mutual =
            mutual && cuda_can_access_peer(device, member) && cuda_can_access_peer(member, device);
      }
      if (mutual) {
        clique.push_back(device);
        placed = true;
        break;
      }
    }
    if (!placed) cliques.push_back({device});
  }
  return cliques;
}

}  // namespace volley
